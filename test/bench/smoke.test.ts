/**
 * `npm run bench -- --smoke`, so the bench cannot rot: tiny counts, and
 * assertions that it ran and produced every figure, never on a timing. The
 * bench runs from a transpiled scratch tree (./scratch.ts).
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { Comparison } from '../../bench/compare.js'
import type { McpComparison } from '../../bench/compare-mcp.js'
import type { McpSteps } from '../../bench/mcp-steps.js'
import type { BenchResults } from '../../bench/results.js'
import { REDIS_URL } from '../store/harness.js'
import { benchTree, runNode, runReport, scratchDir } from './scratch.js'

// The whole bench at smoke counts, then a build comparison: over two minutes on a busy 2-core machine.
t.setTimeout(300_000)

/** Every number in the results, by path; settings are inputs, not figures. */
function figures (value: unknown, path = ''): Array<[string, unknown]> {
  if (typeof value === 'number' || value === null) return [[path, value]]
  if (typeof value !== 'object') return []
  return Object.entries(value).flatMap(([k, v]) => (path === '/meta' && k === 'settings' ? [] : figures(v, `${path}/${k}`)))
}

t.test('the smoke bench runs every measure against its reference and produces every figure', async (t) => {
  const out = benchTree()

  const resultsFile = join(await scratchDir(t), 'results.json')
  // A database of its own: the bench flushes its database before and after, and the profiler's test may run meanwhile.
  const run = await runNode([join(out, 'bench', 'run.js'), '--smoke', '--out', resultsFile], 100_000, { TOOLGATE_BENCH_REDIS: `${REDIS_URL}/5` })
  t.equal(run.code, 0, `the bench exits cleanly${run.code === 0 ? '' : `: ${run.stderr.slice(-2000)}`}`)
  const results = JSON.parse(await readFile(resultsFile, 'utf8')) as BenchResults

  t.equal(results.meta.smoke, true)
  t.same(results.throughput.map((c) => [c.batchSize, c.concurrency]), [[10, 2], [10, 4], [1, 2], [1, 4]], 'both batch sizes at both concurrencies')
  t.same(results.latency.map((c) => c.batchSize), [10, 1])
  t.equal(results.preparation.length, 4)
  t.ok(results.memory.runs > 0)

  const all = figures(results)
  t.ok(all.length > 60, `many figures (${all.length})`)
  t.same(all.filter(([, v]) => typeof v !== 'number' || !Number.isFinite(v)), [], 'every figure is a finite number')
  for (const c of results.throughput) {
    t.ok(c.callsPerSec.direct > 0 && c.callsPerSec.relay > 0 && c.callsPerSec.floor > 0 && c.callsPerSec.toolgate > 0, `calls completed for ${c.batchSize}-call batches at ${c.concurrency}`)
    t.equal(c.errors, 0, 'no target answered an error')
    for (const busy of [c.loopBusy.relay, c.loopBusy.floor, c.loopBusy.toolgate]) t.ok(busy > 0 && busy <= 1, 'event-loop busy shares are fractions')
    const [lowest, highest] = c.toolgateOverRelayRounds
    t.ok(lowest <= c.toolgateOverRelay && c.toolgateOverRelay <= highest, 'the median toolgate / relay lies within its rounds')
  }
  for (const c of results.latency) t.equal(c.errors, 0, `no errors in the ${c.batchSize}-call latency run`)
  const e = results.mcpEndpoint
  t.same(e.errors, { direct: 0, proxy: 0, toolgate: 0 }, 'every MCP tools/call of the /mcp rows answered a result')
  t.ok(e.callsPerSec.direct > 0 && e.callsPerSec.proxy > 0 && e.callsPerSec.toolgate > 0, 'calls went through toolgate\'s /mcp, directly and through mcp-proxy')

  const paths = results.storePaths.rows
  t.same(paths.map((p) => [p.store, p.path, p.batchSize]), [['memory', 'write-ahead', 1], ['memory', 'write-ahead', 10], ['memory', 'tenant-key', 1],
    ['redis', 'write-ahead', 1], ['redis', 'write-ahead', 10], ['redis', 'tenant-key', 1]], 'a write-ahead row per batch size and a tenant-key row, on each store')
  for (const p of paths) {
    t.ok(p.measuredFigures.batchesPerSec > 0 && p.referenceFigures.batchesPerSec > 0 && p.throughputRatio > 0, `${p.store}: ${p.measured} and ${p.reference} both answered`)
    // Counts, not timings: the write-ahead record is one more round trip per epoch, a tenant key two (take, release);
    // half a round trip of slack for a compare-and-set that met a renewal and ran again, on either side.
    if (p.store === 'memory') t.equal(p.addedRoundTrips, 0, 'the memory store makes no round trips')
    else t.ok(p.addedRoundTrips > (p.path === 'tenant-key' ? 1.5 : 0.5), `on Redis, ${p.measured} adds its round trips (${p.addedRoundTrips})`)
  }

  // Not a timing: conflict keys keep same-key calls apart whatever the speed.
  t.equal(results.makespan.overlaps, 0, 'toolgate never overlapped same-key calls in the makespan batches')
  t.equal(results.safety.overlapsToolgate, 0, 'nor in safeParallel runs')
  t.ok(results.safety.keyedWritesParallel > 0, 'the all-parallel run sent keyed writes')

  for (const heading of ['**Throughput**', '**Latency**', '**Store paths**', '**Scheduling**', '**Cost per call and per run**']) {
    t.ok(run.stdout.includes(heading), `the printed table has ${heading}`)
  }
  t.notMatch(run.stdout, /n\/a/, 'no figure is missing from the printed table')
})

t.test('the build comparison runs two builds in paired rounds and gives a ratio per round', async (t) => {
  const out = benchTree()
  // The same build twice: what matters here is that it runs and reports, never the figure.
  const c = await runReport<Comparison>(t, [join(out, 'bench', 'compare.js'), out, out, '--batch', '2', '--conns', '2', '--rounds', '2', '--window-ms', '100', '--warmup-ms', '50', '--json'], 100_000)
  t.equal(c.ratios.length, 2, 'a ratio per round')
  for (const f of [c.a, c.b]) {
    t.equal(f.callsPerSec.length, 2)
    t.ok(f.callsPerSec.every((x) => x > 0) && f.cpuUsPerBatch.every((x) => x > 0), 'each build completed batches and used CPU in every round')
  }
  t.ok(c.ratios.every((r) => Number.isFinite(r) && r > 0) && Number.isFinite(c.median), 'every ratio is a positive number')
})

t.test('the /mcp comparison runs two builds in paired rounds and gives a CPU ratio per round', async (t) => {
  const out = benchTree()
  // The same build twice, at tiny counts: that it runs and reports, never the figure.
  const c = await runReport<McpComparison>(t, [join(out, 'bench', 'compare-mcp.js'), out, out, '--rounds', '2', '--calls', '15', '--warmup', '5', '--json'], 100_000)
  t.equal(c.cpuRatios.length, 2, 'a ratio per round')
  for (const f of [c.a, c.b]) {
    t.equal(f.p50Ms.length, 2)
    t.ok(f.p50Ms.every((x) => x > 0) && f.cpuUsPerCall.every((x) => x > 0), 'each build answered calls and used CPU in every round')
    t.ok(f.addedP50Ms.every((x) => Number.isFinite(x)))
  }
  t.ok(c.cpuRatios.every((r) => Number.isFinite(r) && r > 0) && Number.isFinite(c.medianCpuRatio), 'every ratio is a positive number')
})

t.test('the /mcp call step by step: every step of toolgate\'s process timed, for calls the probe saw whole', async (t) => {
  const out = benchTree()
  const r = await runReport<McpSteps>(t, [join(out, 'bench', 'mcp-steps.js'), '--calls', '30', '--warmup', '10', '--json'], 100_000)
  t.ok(r.timed > 0 && r.timed <= 30, 'the probe timed calls whole, no more than were sent')
  t.same(r.steps.map((s) => s.to), ['upstream created', 'upstream written', 'upstream head', 'upstream end', 'out'], 'a step per mark, in order')
  t.ok(r.steps.every((s) => Number.isFinite(s.medianUs) && s.medianUs >= 0), 'every step took a time')
  t.ok(r.insideUs >= Math.max(...r.steps.map((s) => s.medianUs)), 'the whole is at least its longest step')
  t.ok(r.p50ThroughMs > 0 && r.p50DirectMs > 0 && r.cpuUsPerCall > 0)
})
