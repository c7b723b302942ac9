import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { NO_NODE22, conformanceNode, runConformance } from '../mcp-server/conformance-cli.js'

/**
 * The official MCP conformance suite's client scenarios against toolgate's
 * MCP client: the suite starts each scenario's server (and authorization
 * server) and runs conformance-client.ts with its URL, which starts
 * toolgate's app in that process, imports the server's tools and calls them
 * through the batch route (a server question answered through the approval
 * route, OAuth credentials from the scenario's context). The suite needs
 * Node 22+: it runs on the Node that runs this file when that is new enough
 * (.ci/run's Node 24 pass), else on TOOLGATE_TEST_NODE24; the client runs
 * on the Node that runs this file. Without either it plans nothing.
 */
const SCENARIOS = [
  'initialize', 'tools_call', 'sse-retry', 'elicitation-sep1034-client-defaults',
  'auth/client-credentials-basic', 'auth/client-credentials-jwt'
]

/** Scenarios run at once. */
const CONCURRENTLY = 2

/** Scenarios expected to fail, with why: the suite's own baseline file (a stale entry fails the run). Empty. */
const BASELINE = join(import.meta.dirname, 'conformance-client-baseline.yml')

const node = conformanceNode
if (node === undefined) {
  t.plan(0, NO_NODE22)
} else {
  // The suite splits the command on spaces: none of these paths may hold one.
  const client = [process.execPath, `--import=${join(import.meta.dirname, '..', 'loader', 'ts.mjs')}`, join(import.meta.dirname, 'conformance-client.ts')].join(' ')
  const results = await mkdtemp(join(tmpdir(), 'toolgate-conformance-client-'))
  t.teardown(() => rm(results, { recursive: true, force: true }))

  // Each scenario starts two processes (the suite, the client with toolgate's app): about 15 s each on
  // 2 shared cores. They run CONCURRENTLY at a time, and the file may take longer than tap's usual 120 s.
  t.setTimeout(SCENARIOS.length * 90_000)
  const runOne = (scenario: string): Promise<{ code: number, out: string }> =>
    runConformance(node, ['client', '--command', client, '--scenario', scenario, '--expected-failures', BASELINE, '--timeout', '60000'], results, 90_000)
  const runs = new Map<string, Promise<{ code: number, out: string }>>()
  for (const [i, scenario] of SCENARIOS.entries()) {
    // Scenario i starts once scenario i - CONCURRENTLY has finished.
    const after = i < CONCURRENTLY ? Promise.resolve() : runs.get(SCENARIOS[i - CONCURRENTLY]!)!.then(() => {})
    runs.set(scenario, after.then(() => runOne(scenario)))
  }

  for (const scenario of SCENARIOS) {
    t.test(`the conformance client scenario ${scenario} passes with toolgate as the client`, async (t) => {
      const run = await runs.get(scenario)!
      const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(run.out)
      t.ok(summary, `the suite printed its results\n${run.out.slice(-3000)}`)
      t.equal(summary?.[3], '0', `no check failed\n${run.out.slice(-3000)}`)
      t.equal(run.code, 0, `the suite exited 0\n${run.out.slice(-3000)}`)
    })
  }
}
