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
import type { LatencyCell, RedisThroughput, ThroughputCell } from './results.js'
import { type BenchSettings, TARGETS } from './settings.js'
import { median, percentile, rotate, sig } from './stats.js'

export const TARGET_NAMES: readonly TargetName[] = ['direct', 'relay', 'floor', 'toolgate', 'redis']
/** Latency compares toolgate (on each store) with the relay only. */
type LatencyTarget = 'direct' | 'relay' | 'toolgate' | 'redis'
type ServiceName = 'relay' | 'floor' | 'toolgate' | 'redis'

/** The targets at one concurrency, and the service process behind each (none for direct). */
export interface Targets {
  /** The targets measured: TARGET_NAMES, without `redis` when no Redis answered. */
  names: readonly TargetName[]
  at (name: TargetName, concurrency: number): Target
  process (name: TargetName): BenchChild | undefined
  /** The Redis server's CPU time so far (µs), with `redis`. */
  serverCpu?: () => Promise<number>
}

/** toolgate may run a whole 10-call batch at once, as the relay does (its default cap is 8). */
export const runOptions = (batchSize: number): Record<string, unknown> => ({ maxConcurrentTools: Math.max(8, batchSize) })

/** Drives every target, untimed, so the JIT and the connection pools are warm. */
export async function warmUp (targets: Targets, s: BenchSettings): Promise<void> {
  const concurrency = Math.max(...s.concurrency)
  for (const name of targets.names) {
    for (const batchSize of s.batchSizes) {
      await closedLoop(targets.at(name, concurrency), { concurrency, batchSize, warmupMs: 0, windowMs: s.globalWarmupMs, runOptions: runOptions(batchSize) })
    }
  }
}

interface CellSamples {
  callsPerSec: Record<TargetName, number[]>
  cpu: Record<ServiceName, number[]>
  loop: Record<ServiceName, number[]>
  loadgen: number[]
  errors: number
  /** toolgate on Redis: round trips and commands per batch, the server's CPU per batch. */
  roundTrips: number[]
  commands: number[]
  serverCpu: number[]
}

export async function measureThroughput (targets: Targets, s: BenchSettings, log: (line: string) => void): Promise<ThroughputCell[]> {
  const cells = s.batchSizes.flatMap((batchSize) => s.concurrency.map((concurrency) => ({ batchSize, concurrency })))
  const samples: CellSamples[] = cells.map(() => ({
    callsPerSec: { direct: [], relay: [], floor: [], toolgate: [], redis: [] },
    cpu: { relay: [], floor: [], toolgate: [], redis: [] },
    loop: { relay: [], floor: [], toolgate: [], redis: [] },
    loadgen: [],
    errors: 0,
    roundTrips: [],
    commands: [],
    serverCpu: []
  }))
  for (let round = 0; round < s.rounds; round++) {
    log(`throughput round ${round + 1}/${s.rounds}`)
    for (const [i, cell] of cells.entries()) {
      for (const name of rotate(targets.names, round + i)) {
        const service = targets.process(name)
        const serverCpu = name === 'redis' ? targets.serverCpu : undefined
        const r = await closedLoop(targets.at(name, cell.concurrency), {
          ...cell, warmupMs: s.warmupMs, windowMs: s.windowMs, runOptions: runOptions(cell.batchSize), ...(service === undefined ? {} : { service }), ...(serverCpu === undefined ? {} : { serverCpu })
        })
        const sm = samples[i]!
        sm.callsPerSec[name].push(r.callsPerSec)
        sm.errors += r.errors
        if (name !== 'direct') {
          sm.cpu[name].push(r.serviceCpuUsPerCall ?? NaN)
          sm.loop[name].push(r.serviceLoopBusy ?? NaN)
          sm.loadgen.push(r.loadgenCores)
        }
        if (name === 'redis') {
          sm.roundTrips.push(r.storeRoundTripsPerBatch ?? NaN)
          sm.commands.push(r.storeCommandsPerBatch ?? NaN)
          sm.serverCpu.push(r.serverCpuUsPerBatch ?? NaN)
        }
      }
    }
  }
  return cells.map((cell, i) => {
    const { callsPerSec: c, cpu, loop, loadgen, errors, roundTrips, commands, serverCpu } = samples[i]!
    const perRound = (a: number[], b: number[]): number[] => a.map((x, r) => x / b[r]!)
    const paired = (a: number[], b: number[]): number => sig(median(perRound(a, b)))
    const overRelay = perRound(c.toolgate, c.relay)
    const overMemory = perRound(c.redis, c.toolgate)
    const redis: RedisThroughput | undefined = c.redis.length === 0
      ? undefined
      : {
          callsPerSec: sig(median(c.redis)),
          overMemory: paired(c.redis, c.toolgate),
          overMemoryRounds: [sig(Math.min(...overMemory)), sig(Math.max(...overMemory))],
          overFloor: paired(c.redis, c.floor),
          cpuUsPerCall: sig(median(cpu.redis)),
          loopBusy: sig(median(loop.redis), 2),
          roundTripsPerBatch: sig(median(roundTrips)),
          commandsPerBatch: sig(median(commands)),
          serverCpuUsPerBatch: sig(median(serverCpu)),
          target: TARGETS.redisOverMemory[cell.batchSize] ?? null,
          roundTripsTarget: TARGETS.redisRoundTrips[cell.batchSize] ?? null
        }
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
      target: TARGETS.toolgateOverRelay[cell.batchSize] ?? null,
      floorTarget: TARGETS.toolgateOverFloor[cell.batchSize] ?? null,
      ...(redis === undefined ? {} : { redis })
    }
  })
}

export async function measureLatency (targets: Targets, s: BenchSettings, log: (line: string) => void): Promise<LatencyCell[]> {
  const concurrency = Math.max(...s.concurrency)
  const cells: LatencyCell[] = []
  for (const batchSize of s.batchSizes) {
    const rate = s.latency.batchesPerSec[batchSize] ?? 100
    // [p50, p99] per round, per target
    const rounds: Record<LatencyTarget, Array<[number, number]>> = { direct: [], relay: [], toolgate: [], redis: [] }
    const names = targets.names.filter((n): n is LatencyTarget => n !== 'floor')
    let errors = 0
    let dropped = 0
    for (let round = 0; round < s.latency.rounds; round++) {
      log(`latency, ${batchSize}-call batches at ${rate}/s, round ${round + 1}/${s.latency.rounds}`)
      for (const name of rotate(names, round)) {
        const r = await openLoop(targets.at(name, concurrency), {
          rate, batchSize, warmupMs: s.latency.warmupMs, windowMs: s.latency.windowMs, runOptions: runOptions(batchSize), runs: s.latency.runs
        })
        rounds[name].push([percentile(r.latencies, 50), percentile(r.latencies, 99)])
        errors += r.errors
        dropped += r.dropped
      }
    }
    const p = (name: LatencyTarget, k: 0 | 1): number => sig(median(rounds[name].map((x) => x[k])))
    const added = (k: 0 | 1, name: 'toolgate' | 'redis' = 'toolgate'): number => sig(median(rounds[name].map((x, r) => x[k] - rounds.relay[r]![k])))
    cells.push({
      batchSize,
      batchesPerSec: rate,
      p50Ms: { direct: p('direct', 0), relay: p('relay', 0), toolgate: p('toolgate', 0) },
      p99Ms: { direct: p('direct', 1), relay: p('relay', 1), toolgate: p('toolgate', 1) },
      addedP50Ms: added(0),
      addedP99Ms: added(1),
      errors,
      dropped,
      target: TARGETS.addedP50Ms,
      ...(rounds.redis.length === 0
        ? {}
        : { redis: { p50Ms: p('redis', 0), p99Ms: p('redis', 1), addedP50Ms: added(0, 'redis'), addedP99Ms: added(1, 'redis'), targetP50Ms: TARGETS.redisAddedP50Ms, targetP99Ms: TARGETS.redisAddedP99Ms } })
    })
  }
  return cells
}
