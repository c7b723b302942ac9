/** The results as Markdown tables, ready to paste into the README's Performance section. */
import type { BenchResults } from './results.js'

const n = (x: number): string => (Number.isFinite(x) ? x.toLocaleString('en-US', { maximumSignificantDigits: 3 }) : 'n/a')
const mark = (ok: boolean): string => (ok ? '✓' : '✗')
const atLeast = (x: number, target: number | null): string => (target === null ? n(x) : `${n(x)} ${mark(x >= target)} (≥ ${target})`)
const atMost = (x: number, target: number, unit = ''): string => `${n(x)}${unit} ${mark(x <= target)} (≤ ${target}${unit})`

/** The Redis store's throughput table, beside the memory store's in the same rounds; the capacity it implies. */
function redisThroughput (r: BenchResults): string[] {
  const cells = r.throughput.filter((c) => c.redis !== undefined)
  if (cells.length === 0) {
    const why = 'unavailable' in r.meta.redis ? r.meta.redis.unavailable : 'not measured'
    return [`**Redis store**: not measured (${why}).`, '']
  }
  const out: string[] = []
  out.push('**Redis store**, the same workload and rounds: toolgate on the Redis store (a database of its own, flushed before and after) ' +
    'beside toolgate on the memory store. Round trips and commands are counted by the store\'s client; the Redis server\'s CPU is ' +
    'INFO cpu over the window. Batches per second per core are 10⁶ / CPU µs per batch.')
  out.push('')
  out.push('| batch | conns | floor | toolgate, memory | toolgate, Redis | Redis / memory | its rounds | Redis / floor | CPU µs per call, memory → Redis | ' +
    'Redis round trips (commands) per batch | Redis server CPU µs per batch | batches/s per toolgate core, memory / Redis | batches/s per Redis core | replicas per Redis core |')
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const c of cells) {
    const rd = c.redis!
    const perCore = (cpuUsPerCall: number): number => 1e6 / (cpuUsPerCall * c.batchSize)
    const redisCore = 1e6 / rd.serverCpuUsPerBatch
    out.push(`| ${c.batchSize} call${c.batchSize === 1 ? '' : 's'} | ${c.concurrency} | ${n(c.callsPerSec.floor)} | ${n(c.callsPerSec.toolgate)} | ${n(rd.callsPerSec)} | ` +
      `${atLeast(rd.overMemory, rd.target)} | ${n(rd.overMemoryRounds[0])}–${n(rd.overMemoryRounds[1])} | ${n(rd.overFloor)} | ${n(c.cpuUsPerCall.toolgate)} → ${n(rd.cpuUsPerCall)} | ` +
      `${rd.roundTripsTarget === null ? n(rd.roundTripsPerBatch) : atMost(rd.roundTripsPerBatch, rd.roundTripsTarget)} (${n(rd.commandsPerBatch)}) | ${n(rd.serverCpuUsPerBatch)} | ` +
      `${n(perCore(c.cpuUsPerCall.toolgate))} / ${n(perCore(rd.cpuUsPerCall))} | ${n(redisCore)} | ${n(redisCore / perCore(rd.cpuUsPerCall))} |`)
  }
  out.push('')
  return out
}

/** The /mcp rows: one tools/call through toolgate's MCP endpoint, directly to the upstream and through mcp-proxy. */
function mcpEndpointRows (r: BenchResults): string[] {
  const e = r.mcpEndpoint
  if (e === undefined) return []
  return [
    `| one MCP tools/call over HTTP, p50 / p99 (calls one after another on a session) | toolgate /mcp ${n(e.p50Ms.toolgate)} / ${n(e.p99Ms.toolgate)} ms: added ${atMost(e.addedP50Ms.toolgate, e.targetAddedP50Ms, ' ms')} / ${n(e.addedP99Ms.toolgate)} ms | ` +
      `direct to the upstream ${n(e.p50Ms.direct)} / ${n(e.p99Ms.direct)} ms; mcp-proxy ${n(e.p50Ms.proxy)} / ${n(e.p99Ms.proxy)} ms (added ${n(e.addedP50Ms.proxy)} / ${n(e.addedP99Ms.proxy)} ms) | | added p50 ≤ ${e.targetAddedP50Ms} ms |`,
    `| MCP tools/call per second, ${e.concurrency} sessions in a closed loop | toolgate /mcp ${n(e.callsPerSec.toolgate)} | direct ${n(e.callsPerSec.direct)}; mcp-proxy ${n(e.callsPerSec.proxy)} | ` +
      `${atLeast(e.toolgateOverProxy, 1)} (toolgate / proxy) | ≥ the proxy's |`
  ]
}

/** The store-path rows: each path beside its reference, on each store. */
function storePathRows (r: BenchResults): string[] {
  const p = r.storePaths
  if (p === undefined) return []
  const out: string[] = []
  out.push(`**Store paths**, one batch at a time on one connection, ${p.batchesPerRound} batches per variant per round, the two variants of a row in a different order ` +
    'each round; a write batch records its writes ahead (one record per epoch), a tenant-scoped conflict key is taken in the store before the call and released after. ' +
    'Ratios are measured over reference within a round.')
  out.push('')
  out.push('| store | measured | reference | p50 ms, measured / reference | p99 ms, measured / reference | batches/s, measured / reference | its rounds | CPU µs per batch, measured / reference | CPU ratio | Redis round trips per batch, measured / reference (added) |')
  out.push('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const row of p.rows) {
    const m = row.measuredFigures
    const f = row.referenceFigures
    out.push(`| ${row.store === 'redis' ? 'Redis' : 'memory'} | ${row.measured} | ${row.reference} | ${n(m.p50Ms)} / ${n(f.p50Ms)} | ${n(m.p99Ms)} / ${n(f.p99Ms)} | ` +
      `${n(m.batchesPerSec)} / ${n(f.batchesPerSec)} = ${n(row.throughputRatio)} | ${n(row.throughputRatioRounds[0])}–${n(row.throughputRatioRounds[1])} | ` +
      `${n(m.cpuUsPerBatch)} / ${n(f.cpuUsPerBatch)} | ${n(row.cpuRatio)} | ${row.store === 'redis' ? `${n(m.roundTripsPerBatch)} / ${n(f.roundTripsPerBatch)} (+${n(row.addedRoundTrips)})` : '–'} |`)
  }
  out.push('')
  return out
}

export function markdown (r: BenchResults): string {
  const m = r.meta
  const out: string[] = []
  out.push(`Measured by \`npm run bench\`${m.smoke ? ' --smoke (tiny counts: the figures mean nothing)' : ''} on ${m.date.slice(0, 10)}: Node ${m.node}, ` +
    `${m.cpus} × ${m.cpuModel}, load average ${m.loadavgStart.join(' / ')} at the start and ${m.loadavgEnd.join(' / ')} at the end ` +
    `(other work shared the machine), ${m.durationS} s in all. Medians of ${m.settings.rounds} rounds, the targets interleaved ` +
    `in every round; ratios are taken within a round. toolgate logs at \`${m.toolgateLogLevel}\` to /dev/null.`)
  out.push('')
  out.push('**Throughput**, calls per second, `look`-style read-only calls to a fast fastify executor. ' +
    'direct: the load generator calls the executor itself; relay: a bare fastify + undici forwarder; floor: the SPEC\'s mandatory ' +
    'work per batch and nothing more, written flat (bench/floor.ts); toolgate: the built service.')
  out.push('')
  out.push('| batch | conns | direct | relay | floor | toolgate | relay / direct | floor / relay | toolgate / relay | its rounds, lowest–highest | toolgate / floor | toolgate / direct | CPU µs per call, relay → floor → toolgate | event loop busy, relay / floor / toolgate |')
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const c of r.throughput) {
    out.push(`| ${c.batchSize} call${c.batchSize === 1 ? '' : 's'} | ${c.concurrency} | ${n(c.callsPerSec.direct)} | ${n(c.callsPerSec.relay)} | ${n(c.callsPerSec.floor)} | ${n(c.callsPerSec.toolgate)} | ` +
      `${n(c.relayOverDirect)} | ${n(c.floorOverRelay)} | ${atLeast(c.toolgateOverRelay, c.target)} | ${n(c.toolgateOverRelayRounds[0])}–${n(c.toolgateOverRelayRounds[1])} | ${atLeast(c.toolgateOverFloor, c.floorTarget ?? null)} | ${n(c.toolgateOverDirect)} | ` +
      `${n(c.cpuUsPerCall.relay)} → ${n(c.cpuUsPerCall.floor)} → ${n(c.cpuUsPerCall.toolgate)} (× ${n(c.cpuToolgateOverRelay)}) | ${n(c.loopBusy.relay)} / ${n(c.loopBusy.floor)} / ${n(c.loopBusy.toolgate)} |`)
  }
  out.push('')
  out.push(...redisThroughput(r))
  out.push(...storePathRows(r))
  out.push('**Latency** of a batch at a moderate, fixed arrival rate (open loop), ms.')
  out.push('')
  out.push('| batch | batches/s | p50 direct | p50 relay | p50 toolgate | added p50 | p99 relay | p99 toolgate | added p99 |')
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const c of r.latency) {
    out.push(`| ${c.batchSize} call${c.batchSize === 1 ? '' : 's'} | ${c.batchesPerSec} | ${n(c.p50Ms.direct)} | ${n(c.p50Ms.relay)} | ${n(c.p50Ms.toolgate)} | ` +
      `${n(c.addedP50Ms)} ${mark(c.addedP50Ms < c.target)} (< ${c.target}) | ${n(c.p99Ms.relay)} | ${n(c.p99Ms.toolgate)} | ${n(c.addedP99Ms)} |`)
    const rd = c.redis
    if (rd !== undefined) {
      out.push(`| ${c.batchSize} call${c.batchSize === 1 ? '' : 's'}, Redis store | ${c.batchesPerSec} | ${n(c.p50Ms.direct)} | ${n(c.p50Ms.relay)} | ${n(rd.p50Ms)} | ` +
        `${n(rd.addedP50Ms)} ${mark(rd.addedP50Ms < rd.targetP50Ms)} (< ${rd.targetP50Ms}) | ${n(c.p99Ms.relay)} | ${n(rd.p99Ms)} | ${n(rd.addedP99Ms)} ${mark(rd.addedP99Ms < rd.targetP99Ms)} (< ${rd.targetP99Ms}) |`)
    }
  }
  out.push('')
  const mk = r.makespan
  const sf = r.safety
  out.push('**Scheduling**, calls that sleep a known time at the executor, one batch at a time.')
  out.push('')
  out.push('| measure | toolgate | reference | target |')
  out.push('| --- | ---: | --- | --- |')
  out.push(`| makespan of ${mk.batches} random constrained batches (reads, writes, keys, barriers, caps 1–8) | ${atMost(mk.measuredOverBound, mk.target)} | ` +
    `lower bound the constraints allow (epochs, key chains, cap; each call charged its sleep + ${n(mk.executorOverheadMs)} ms executor round trip); ` +
    `the scheduling rule alone reaches ${n(mk.ruleOverBound)}, toolgate's overhead adds × ${n(mk.measuredOverRule)}; worst batch ${n(mk.worstBatch)} | measured / bound ≤ ${mk.target} |`)
  out.push(`| safety at speed: ${sf.batches} read-heavy batches of ${sf.callsPerBatch} calls (80% reads; writes keyed over ${sf.keys} keys) | ` +
    `safeParallel / all-parallel ${atMost(sf.safeOverParallel, sf.target)} | the same batches in parallel mode with the keys dropped; ` +
    `no schedule that keeps same-key writes apart can go below ${n(sf.floorSafeOverParallel)} here | ≤ ${sf.target} |`)
  out.push(`| same-key overlaps seen by the executor | ${sf.overlapsToolgate + mk.overlaps} ${mark(sf.overlapsToolgate + mk.overlaps === 0)} | ` +
    `all-parallel: ${sf.overlapsParallel} in ${sf.keyedWritesParallel} keyed writes | 0 |`)
  out.push('')
  out.push('**Cost per call and per run**, in process.')
  out.push('')
  out.push('| measure | toolgate | reference | ratio | target |')
  out.push('| --- | ---: | --- | ---: | --- |')
  for (const p of r.preparation) {
    out.push(`| preparation + fingerprint CPU, ${p.name} | ${n(p.toolgateUs)} µs | ${n(p.referenceUs)} µs (parse, Ajv validate, JCS SHA-256) | ${n(p.ratio)} | ${atMost(p.toolgateUs, p.target, ' µs')} |`)
  }
  if (r.mcp !== undefined) {
    out.push(`| one MCP tools/call, CPU of the calling process (filesystem server over stdio) | ${n(r.mcp.toolgateUs)} µs (a one-call batch) | ${n(r.mcp.directUs)} µs (the SDK client's callTool) | ${n(r.mcp.ratio)} | |`)
    out.push(`| the same call through toolgate's MCP executor alone (the batch's dispatch step) | ${n(r.mcp.executorUs)} µs | ${n(r.mcp.directUs)} µs (callTool) | ${n(r.mcp.executorRatio)} | |`)
  }
  const mem = r.memory
  out.push(...mcpEndpointRows(r))
  out.push(`| memory per idle run (RSS growth over ${mem.runs.toLocaleString('en-US')} runs; heap ${n(mem.toolgateHeapBytesPerRun)} B) | ` +
    `${n(mem.toolgateBytesPerRun)} B | ${n(mem.referenceBytesPerRun)} B (a Map of run ids to a 4-field record) | ${n(mem.ratio)} | ${atMost(mem.toolgateBytesPerRun, mem.target, ' B')} |`)
  out.push('')
  out.push(`Placement: ${m.placement}`)
  return out.join('\n')
}
