/**
 * `npm run bench`: builds, then measures toolgate against direct calls and a
 * bare relay on 127.0.0.1, prints Markdown tables and writes
 * bench/results.json.
 *
 *   node dist/bench/run.js                 # the full bench, ~3 minutes
 *   node dist/bench/run.js --smoke         # tiny counts, a few seconds (what the tests run)
 *   node dist/bench/run.js --rounds 3      # fewer throughput and latency rounds
 *   node dist/bench/run.js --out file.json # results elsewhere (smoke results go to the temp dir by default)
 *   node dist/bench/run.js --log-level warn
 *   node dist/bench/run.js --profile dir   # the floor and toolgate (both stores) under --cpu-prof instead: CPU per batch and where it went
 *   node dist/bench/run.js --mcp-endpoint  # only the /mcp rows (direct, mcp-proxy, toolgate), printed as JSON (~1 minute)
 *   node dist/bench/run.js --mcp-endpoint --cpu-prof dir  # the same, toolgate's process under --cpu-prof, its profile in dir
 */
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { measureMcpEndpoint } from './mcp-endpoint.js'
import { profileMarkdown, profileServices } from './profiling.js'
import { markdown } from './report.js'
import { FULL, SMOKE } from './settings.js'
import { runBench } from './suite.js'

/** The directory holding package.json, above this file (bench/ or dist/bench/). */
export function projectRoot (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir)
    if (up === dir) throw new Error('cannot find the project root (package.json)')
    dir = up
  }
  return dir
}

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      out: { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      profile: { type: 'string' },
      'mcp-endpoint': { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' }
    }
  })
  const root = projectRoot()
  const log = (line: string): void => { process.stderr.write(`bench: ${line}\n`) }
  const logLevel = values['log-level']

  if (values.profile !== undefined) {
    const report = await profileServices(root, values.profile, values.smoke ? SMOKE : FULL, logLevel, log)
    process.stdout.write(profileMarkdown(report) + '\n')
    return
  }

  const rounds = values.rounds === undefined ? undefined : Number(values.rounds)
  if (rounds !== undefined && (!Number.isInteger(rounds) || rounds < 1)) throw new TypeError(`Expected --rounds to be a positive integer, got ${values.rounds}`)
  if (values['mcp-endpoint']) {
    const base = (values.smoke ? SMOKE : FULL).mcpEndpoint
    const profDir = values['cpu-prof']
    const toolgateFlags = profDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${resolve(profDir)}`]
    const cost = await measureMcpEndpoint({ ...base, ...(rounds === undefined ? {} : { rounds }) }, logLevel, log, toolgateFlags)
    process.stdout.write(JSON.stringify({ loadavg: loadavg().map((x) => Math.round(x * 100) / 100), ...cost }, null, 2) + '\n')
    return
  }
  const results = await runBench({ smoke: values.smoke, root, logLevel, log, ...(rounds === undefined ? {} : { rounds }) })
  const out = values.out ?? (values.smoke ? join(tmpdir(), 'toolgate-bench-smoke.json') : join(root, 'bench', 'results.json'))
  await writeFile(out, JSON.stringify(results, null, 2) + '\n')
  process.stdout.write(markdown(results) + '\n')
  log(`results written to ${out}`)
}

await main()
