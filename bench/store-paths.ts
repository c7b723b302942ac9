/**
 * The store's own paths, each against a reference in the same rounds: a
 * batch of writes with its write-ahead record (SPEC section 17) against the
 * same batch of reads (no record), and a write whose conflict key is
 * tenant-scoped (taken in the store before the call, released after)
 * against the same write with a run-scoped key. On the memory store and,
 * when one answers, on the Redis store: toolgate's own processes of the
 * throughput rows, one batch at a time on one connection, so each figure is
 * the path's cost and not the queue's.
 *
 * Every round sends each variant `batches` batches in a fresh run, the
 * variants in a different order each round; ratios are taken within a round.
 * Measured over reference: batches per second (sequential, so the inverse of
 * the mean latency) and the service's CPU per batch, and the Redis round
 * trips per batch, counted by the store's client.
 */
import { performance } from 'node:perf_hooks'
import type { BenchChild } from './children.js'
import { type BenchCall, type Target, assertAllOk } from './clients.js'
import type { BenchSettings } from './settings.js'
import { median, percentile, rotate, sig } from './stats.js'

/** The tool registered with a tenant-scoped conflict key (bench/workloads.ts). */
export const TENANT_TOOL = 's_write_tenant'

export type StorePath = 'write-ahead' | 'tenant-key'

interface Variant { label: string, calls: (n: number) => BenchCall[] }

interface Pair { path: StorePath, batchSize: number, measured: Variant, reference: Variant }

const calls = (tool: string, size: number, keyed: boolean) => (n: number): BenchCall[] =>
  Array.from({ length: size }, (_, i) => ({ id: `c${i}`, name: tool, arguments: keyed ? { ms: 0, key: `f${(n + i) % 8}`, n: n * 100 + i } : { ms: 0, n: n * 100 + i } }))

/** What is measured, each beside its reference. s_write_open and s_read differ only in being a write. */
export const PAIRS: readonly Pair[] = [
  { path: 'write-ahead', batchSize: 1, measured: { label: '1 write', calls: calls('s_write_open', 1, false) }, reference: { label: '1 read', calls: calls('s_read', 1, false) } },
  { path: 'write-ahead', batchSize: 10, measured: { label: '10 writes', calls: calls('s_write_open', 10, false) }, reference: { label: '10 reads', calls: calls('s_read', 10, false) } },
  { path: 'tenant-key', batchSize: 1, measured: { label: '1 write, tenant-scoped key', calls: calls(TENANT_TOOL, 1, true) }, reference: { label: '1 write, run-scoped key', calls: calls('s_write', 1, true) } }
]

interface Side { p50Ms: number, p99Ms: number, batchesPerSec: number, cpuUsPerBatch: number, roundTripsPerBatch: number }

export interface StorePathRow {
  store: 'memory' | 'redis'
  path: StorePath
  batchSize: number
  measured: string
  reference: string
  /** Medians over rounds. */
  measuredFigures: Side
  referenceFigures: Side
  /** Measured over reference, paired by round: batches per second (≤ 1 is the path's cost) and CPU per batch (≥ 1). */
  throughputRatio: number
  throughputRatioRounds: [number, number]
  cpuRatio: number
  /** Redis round trips the path adds per batch (0 on the memory store). */
  addedRoundTrips: number
}

export interface StorePathCost {
  rounds: number
  batchesPerRound: number
  rows: StorePathRow[]
}

const RUN_OPTIONS = { maxConcurrentTools: 10, limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0, maxToolCalls: null } }

/** One variant, `batches` batches one after another in a fresh run. */
async function once (target: Target, service: BenchChild, variant: Variant, batches: number, from: number): Promise<Side> {
  const runId = await target.openRun(RUN_OPTIONS)
  assertAllOk(target.name, await target.send(runId, variant.calls(from)), variant.calls(from).length)
  const before = await service.cpu()
  const times: number[] = []
  const t0 = performance.now()
  for (let n = 1; n <= batches; n++) {
    const b0 = performance.now()
    const answer = await target.send(runId, variant.calls(from + n))
    times.push(performance.now() - b0)
    if (!answer.ok || !answer.text.includes('"status":"ok"')) throw new Error(`${target.name}, ${variant.label}: ${answer.status} ${answer.text.slice(0, 300)}`)
  }
  const wall = performance.now() - t0
  const after = await service.cpu()
  await target.closeRun(runId)
  return {
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    batchesPerSec: batches / (wall / 1000),
    cpuUsPerBatch: (after.cpuUs - before.cpuUs) / batches,
    roundTripsPerBatch: (after.storeRoundTrips - before.storeRoundTrips) / batches
  }
}

/** `stores`: each store's toolgate, its target (one connection) and service process. */
export async function measureStorePaths (stores: ReadonlyArray<{ store: 'memory' | 'redis', target: Target, service: BenchChild }>,
  s: BenchSettings['storePaths'], log: (line: string) => void): Promise<StorePathCost> {
  const rows: StorePathRow[] = []
  let seq = 0
  for (const { store, target, service } of stores) {
    for (const pair of PAIRS) {
      const sides = { measured: [] as Side[], reference: [] as Side[] }
      // Round 0 warms both variants up and is not kept.
      for (let round = 0; round <= s.rounds; round++) {
        if (round > 0) log(`store paths, ${store}, ${pair.measured.label} against ${pair.reference.label}, round ${round} of ${s.rounds}`)
        for (const side of rotate(['measured', 'reference'] as const, round)) {
          const figures = await once(target, service, pair[side], round === 0 ? Math.min(50, s.batches) : s.batches, (seq += s.batches + 1))
          if (round > 0) sides[side].push(figures)
        }
      }
      const ratios = sides.measured.map((m, i) => m.batchesPerSec / sides.reference[i]!.batchesPerSec)
      const summary = (xs: Side[]): Side => ({
        p50Ms: sig(median(xs.map((x) => x.p50Ms))),
        p99Ms: sig(median(xs.map((x) => x.p99Ms))),
        batchesPerSec: sig(median(xs.map((x) => x.batchesPerSec))),
        cpuUsPerBatch: sig(median(xs.map((x) => x.cpuUsPerBatch))),
        roundTripsPerBatch: sig(median(xs.map((x) => x.roundTripsPerBatch)))
      })
      const measured = summary(sides.measured)
      const reference = summary(sides.reference)
      rows.push({
        store,
        path: pair.path,
        batchSize: pair.batchSize,
        measured: pair.measured.label,
        reference: pair.reference.label,
        measuredFigures: measured,
        referenceFigures: reference,
        throughputRatio: sig(median(ratios)),
        throughputRatioRounds: [sig(Math.min(...ratios)), sig(Math.max(...ratios))],
        cpuRatio: sig(median(sides.measured.map((m, i) => m.cpuUsPerBatch / sides.reference[i]!.cpuUsPerBatch))),
        addedRoundTrips: sig(measured.roundTripsPerBatch - reference.roundTripsPerBatch)
      })
    }
  }
  return { rounds: s.rounds, batchesPerRound: s.batches, rows }
}
