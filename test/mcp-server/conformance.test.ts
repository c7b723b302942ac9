import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { buildTestApp } from '../helper.js'
import { startConformanceUpstream } from './conformance-upstream.js'
import { NO_NODE22, conformanceNode, runConformance } from './conformance-cli.js'

/**
 * The official MCP conformance suite's server scenarios against toolgate's
 * own `/mcp`, with an upstream MCP server of the suite's test tools imported
 * with an empty prefix. The suite needs Node 22+: it runs on the Node that
 * runs this file when that is new enough (.ci/run's Node 24 pass), else on
 * TOOLGATE_TEST_NODE24, a Node 22+ binary; without either it plans nothing.
 */
const SCENARIOS = [
  'server-initialize', 'ping', 'logging-set-level', 'tools-list',
  'tools-call-simple-text', 'tools-call-image', 'tools-call-audio', 'tools-call-embedded-resource',
  'tools-call-mixed-content', 'tools-call-with-logging', 'tools-call-error', 'tools-call-with-progress',
  'tools-call-sampling', 'tools-call-elicitation',
  'json-schema-2020-12', 'dns-rebinding-protection'
]

/** Scenarios expected to fail, with why: the suite's own baseline file (a stale entry fails the run). */
const BASELINE = join(import.meta.dirname, 'conformance-baseline.yml')
const EXPECTED_FAILURES = new Set<string>()

const node = conformanceNode
if (node === undefined) {
  t.plan(0, NO_NODE22)
} else {
  const upstream = await startConformanceUpstream()
  t.teardown(() => upstream.close())
  const { app } = await buildTestApp(t, { config: { host: '127.0.0.1' } })
  await app.services.mcp.startAll([{ name: 'conformance', transport: 'streamableHttp', url: upstream.url, prefix: '', trust: 'trusted' }])
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const results = await mkdtemp(join(tmpdir(), 'toolgate-conformance-'))
  t.teardown(() => rm(results, { recursive: true, force: true }))

  for (const scenario of SCENARIOS) {
    const expected = EXPECTED_FAILURES.has(scenario)
    t.test(`the conformance scenario ${scenario} ${expected ? 'fails as its baseline entry says' : 'passes'} against /mcp`, async (t) => {
      const run = await runConformance(node, ['server', '--url', `${base}/mcp`, '--scenario', scenario, '--expected-failures', BASELINE], results, 60_000)
      const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(run.out)
      t.ok(summary, `the suite printed its results\n${run.out.slice(-2000)}`)
      if (!expected) t.equal(summary?.[3], '0', `no check failed\n${run.out.slice(-2000)}`)
      t.equal(run.code, 0, expected ? 'the suite exited 0: the scenario failed as expected' : 'the suite exited 0')
    })
  }
}
