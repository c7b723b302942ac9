/**
 * Measures 1 and 2 of the issue: throughput in a closed loop and batch
 * latency in an open loop, for direct, relay, the floor (throughput only) and
 * toolgate. Every round
 * measures each target once per cell, starting with a different target each
 * time, and ratios are taken within a round, so drift on a shared machine
 * cancels instead of favouring whoever ran in the quiet minute.
 */
import type { BenchChild } from './children.js'
import type { Target, TargetName } from './clients.js'
import { closedLoop, openLoop } from './load.js'
import type { LatencyCell, ThroughputCell } from './results.js'
import { type BenchSettings, TARGETS } from './settings.js'
import { median, percentile, rotate, sig } from './stats.js'

export const TARGET_NAMES: readonly TargetName[] = ['direct', 'relay', 'floor', 'toolgate']
/** Latency compares toolgate with the relay only. */
const LATENCY_TARGETS: readonly LatencyTarget[] = ['direct', 'relay', 'toolgate']
type LatencyTarget = 'direct' | 'relay' | 'toolgate'
type ServiceName = 'relay' | 'floor' | 'toolgate'

/** The targets at one concurrency, and the service process behind each (none for direct). */
export interface Targets {
  at (name: TargetName, concurrency: number): Target
  process (name: TargetName): BenchChild | undefined
}

/** toolgate may run a whole 10-call batch at once, as the relay does (its default cap is 8). */
export const runOptions = (batchSize: number): Record<string, unknown> => ({ maxConcurrentTools: Math.max(8, batchSize) })

/** Drives every target, untimed, so the JIT and the connection pools are warm. */
export async function warmUp (targets: Targets, s: BenchSettings): Promise<void> {
  const concurrency = Math.max(...s.concurrency)
  for (const name of TARGET_NAMES) {
    for (const batchSize of s.batchSizes) {
      await closedLoop(targets.at(name, concurrency), { concurrency, batchSize, warmupMs: 0, windowMs: s.globalWarmupMs, runOptions: runOptions(batchSize) })
    }
  }
}

interface CellSamples { callsPerSec: Record<TargetName, number[]>, cpu: Record<ServiceName, number[]>, loop: Record<ServiceName, number[]>, loadgen: number[], errors: number }

export async function measureThroughput (targets: Targets, s: BenchSettings, log: (line: string) => void): Promise<ThroughputCell[]> {
  const cells = s.batchSizes.flatMap((batchSize) => s.concurrency.map((concurrency) => ({ batchSize, concurrency })))
  const samples: CellSamples[] = cells.map(() => ({
    callsPerSec: { direct: [], relay: [], floor: [], toolgate: [] },
    cpu: { relay: [], floor: [], toolgate: [] },
    loop: { relay: [], floor: [], toolgate: [] },
    loadgen: [],
    errors: 0
  }))
  for (let round = 0; round < s.rounds; round++) {
    log(`throughput round ${round + 1}/${s.rounds}`)
    for (const [i, cell] of cells.entries()) {
      for (const name of rotate(TARGET_NAMES, round + i)) {
        const service = targets.process(name)
        const r = await closedLoop(targets.at(name, cell.concurrency), {
          ...cell, warmupMs: s.warmupMs, windowMs: s.windowMs, runOptions: runOptions(cell.batchSize), ...(service === undefined ? {} : { service })
        })
        const sm = samples[i]!
        sm.callsPerSec[name].push(r.callsPerSec)
        sm.errors += r.errors
        if (name !== 'direct') {
          sm.cpu[name].push(r.serviceCpuUsPerCall ?? NaN)
          sm.loop[name].push(r.serviceLoopBusy ?? NaN)
          sm.loadgen.push(r.loadgenCores)
        }
      }
    }
  }
  return cells.map((cell, i) => {
    const { callsPerSec: c, cpu, loop, loadgen, errors } = samples[i]!
    const perRound = (a: number[], b: number[]): number[] => a.map((x, r) => x / b[r]!)
    const paired = (a: number[], b: number[]): number => sig(median(perRound(a, b)))
    const overRelay = perRound(c.toolgate, c.relay)
    return {
      ...cell,
      callsPerSec: { direct: sig(median(c.direct)), relay: sig(median(c.relay)), floor: sig(median(c.floor)), toolgate: sig(median(c.toolgate)) },
      relayOverDirect: paired(c.relay, c.direct),
      floorOverRelay: paired(c.floor, c.relay),
      toolgateOverFloor: paired(c.toolgate, c.floor),
      toolgateOverRelay: paired(c.toolgate, c.relay),
      toolgateOverRelayRounds: [sig(Math.min(...overRelay)), sig(Math.max(...overRelay))],
      toolgateOverDirect: paired(c.toolgate, c.direct),
      cpuUsPerCall: { relay: sig(median(cpu.relay)), floor: sig(median(cpu.floor)), toolgate: sig(median(cpu.toolgate)) },
      cpuToolgateOverRelay: paired(cpu.toolgate, cpu.relay),
      loopBusy: { relay: sig(median(loop.relay), 2), floor: sig(median(loop.floor), 2), toolgate: sig(median(loop.toolgate), 2) },
      loadgenCores: sig(Math.max(...loadgen), 2),
      errors,
      target: TARGETS.toolgateOverRelay[cell.batchSize] ?? null
    }
  })
}

export async function measureLatency (targets: Targets, s: BenchSettings, log: (line: string) => void): Promise<LatencyCell[]> {
  const concurrency = Math.max(...s.concurrency)
  const cells: LatencyCell[] = []
  for (const batchSize of s.batchSizes) {
    const rate = s.latency.batchesPerSec[batchSize] ?? 100
    // [p50, p99] per round, per target
    const rounds: Record<LatencyTarget, Array<[number, number]>> = { direct: [], relay: [], toolgate: [] }
    let errors = 0
    let dropped = 0
    for (let round = 0; round < s.latency.rounds; round++) {
      log(`latency, ${batchSize}-call batches at ${rate}/s, round ${round + 1}/${s.latency.rounds}`)
      for (const name of rotate(LATENCY_TARGETS, round)) {
        const r = await openLoop(targets.at(name, concurrency), {
          rate, batchSize, warmupMs: s.latency.warmupMs, windowMs: s.latency.windowMs, runOptions: runOptions(batchSize), runs: s.latency.runs
        })
        rounds[name].push([percentile(r.latencies, 50), percentile(r.latencies, 99)])
        errors += r.errors
        dropped += r.dropped
      }
    }
    const p = (name: LatencyTarget, k: 0 | 1): number => sig(median(rounds[name].map((x) => x[k])))
    const added = (k: 0 | 1): number => sig(median(rounds.toolgate.map((x, r) => x[k] - rounds.relay[r]![k])))
    cells.push({
      batchSize,
      batchesPerSec: rate,
      p50Ms: { direct: p('direct', 0), relay: p('relay', 0), toolgate: p('toolgate', 0) },
      p99Ms: { direct: p('direct', 1), relay: p('relay', 1), toolgate: p('toolgate', 1) },
      addedP50Ms: added(0),
      addedP99Ms: added(1),
      errors,
      dropped,
      target: TARGETS.addedP50Ms
    })
  }
  return cells
}
