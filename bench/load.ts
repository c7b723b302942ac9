/**
 * The two load shapes: a closed loop (N connections, each sending its next
 * batch as soon as the last is answered) for throughput, and an open loop (a
 * fixed arrival rate, whatever the answers do) for latency. Both warm up
 * first and count only what completes inside the measuring window.
 */
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { BenchChild, ChildUsage } from './children.js'
import { type BenchCall, type Target, assertAllOk } from './clients.js'

/** Calls of the `look` tool whose arguments never repeat back to back (no exact-repeat advisories). */
export function lookCalls (size: number, n: number): BenchCall[] {
  const calls: BenchCall[] = []
  for (let i = 0; i < size; i++) {
    const k = n * size + i
    calls.push({ id: `call_${i}`, name: 'look', arguments: { x: k % 251, y: Math.floor(k / 251) % 251 } })
  }
  return calls
}

export interface ClosedLoopOptions {
  concurrency: number
  batchSize: number
  warmupMs: number
  windowMs: number
  /** Options of the runs opened for the workers (toolgate only). */
  runOptions: Record<string, unknown>
  /** The service process whose CPU time per call is reported, if any. */
  service?: BenchChild
  /** CPU time (µs) the Redis server has used so far, when the service uses one: its share per batch is reported. */
  serverCpu?: () => Promise<number>
}

export interface ClosedLoopResult {
  callsPerSec: number
  calls: number
  errors: number
  /** CPU time the service process spent per call inside the window (µs), or null for direct. */
  serviceCpuUsPerCall: number | null
  /** CPU time of the load generator over the window, as a share of one core. */
  loadgenCores: number
  /** Share of the window the service's event loop was busy (1: bound by its own main thread), or null for direct. */
  serviceLoopBusy: number | null
  /** The service's Redis round trips and commands per batch inside the window (0 on the memory store), or null for direct. */
  storeRoundTripsPerBatch: number | null
  storeCommandsPerBatch: number | null
  /** CPU time of the Redis server per batch inside the window (µs), when `serverCpu` was given. */
  serverCpuUsPerBatch: number | null
}

function loopBusy (a: ChildUsage, b: ChildUsage): number {
  const active = b.loopActiveMs - a.loopActiveMs
  const idle = b.loopIdleMs - a.loopIdleMs
  return active + idle > 0 ? active / (active + idle) : 0
}

export async function closedLoop (target: Target, opts: ClosedLoopOptions): Promise<ClosedLoopResult> {
  const runIds = await Promise.all(Array.from({ length: opts.concurrency }, () => target.openRun(opts.runOptions)))
  let calls = 0
  let errors = 0
  let firstError: Error | null = null
  const t0 = performance.now()
  const windowStart = t0 + opts.warmupMs
  const windowEnd = windowStart + opts.windowMs
  let cpuAtStart: Promise<ChildUsage | null> = Promise.resolve(null)
  let serverAtStart: Promise<number | null> = Promise.resolve(null)
  let loadgenAtStart = process.cpuUsage()
  const startTimer = setTimeout(() => {
    cpuAtStart = opts.service?.cpu() ?? Promise.resolve(null)
    serverAtStart = opts.serverCpu?.() ?? Promise.resolve(null)
    loadgenAtStart = process.cpuUsage()
  }, opts.warmupMs)

  // A window in which nothing completed (a tiny smoke window on a busy machine) stays open
  // until something does, so every figure exists; `closedAt` is where it really closed.
  let closedAt = windowEnd
  const open = (now: number): boolean => now < windowEnd || (calls === 0 && firstError === null && now < windowEnd + 10_000)
  const worker = async (runId: string): Promise<void> => {
    for (let n = 0; open(performance.now()); n++) {
      const batch = lookCalls(opts.batchSize, n)
      const answer = await target.send(runId, batch)
      const at = performance.now()
      if (n === 0) {
        try { assertAllOk(target.name, answer, opts.batchSize) } catch (err) { firstError ??= err as Error }
      }
      if (!answer.ok) errors++
      else if (at >= windowStart && open(at)) {
        calls += opts.batchSize
        if (at > closedAt) closedAt = at
      }
    }
  }
  const endSample = sleep(opts.warmupMs + opts.windowMs).then(async () => ({
    service: await (opts.service?.cpu() ?? Promise.resolve(null)),
    server: await (opts.serverCpu?.() ?? Promise.resolve(null)),
    loadgen: process.cpuUsage(loadgenAtStart)
  }))
  await Promise.all(runIds.map(worker))
  clearTimeout(startTimer)
  const [start, end, serverStart] = await Promise.all([cpuAtStart, endSample, serverAtStart])
  const batches = calls / opts.batchSize
  const perBatch = (a: number | undefined, b: number | undefined): number | null => (a === undefined || b === undefined || batches === 0 ? null : (b - a) / batches)
  await Promise.all(runIds.map((id) => target.closeRun(id)))
  if (firstError !== null) throw firstError
  return {
    callsPerSec: calls / ((closedAt - windowStart) / 1000),
    calls,
    errors,
    serviceCpuUsPerCall: start !== null && end.service !== null && calls > 0 ? (end.service.cpuUs - start.cpuUs) / calls : null,
    serviceLoopBusy: start !== null && end.service !== null ? loopBusy(start, end.service) : null,
    storeRoundTripsPerBatch: perBatch(start?.storeRoundTrips, end.service?.storeRoundTrips),
    storeCommandsPerBatch: perBatch(start?.storeCommands, end.service?.storeCommands),
    serverCpuUsPerBatch: perBatch(serverStart ?? undefined, end.server ?? undefined),
    loadgenCores: (end.loadgen.user + end.loadgen.system) / 1000 / opts.windowMs
  }
}

export interface OpenLoopOptions {
  /** Batches per second. */
  rate: number
  batchSize: number
  warmupMs: number
  windowMs: number
  runOptions: Record<string, unknown>
  /** Runs kept ready: a run holds one batch at a time. */
  runs: number
}

export interface OpenLoopResult {
  /** Batch latencies (ms) of batches sent inside the window. */
  latencies: number[]
  /** When each of those was sent (epoch ms, comparable across processes), in the same order. */
  sentAt: number[]
  errors: number
  /** Batches not sent because every run was busy (the target could not keep up). */
  dropped: number
}

export async function openLoop (target: Target, opts: OpenLoopOptions): Promise<OpenLoopResult> {
  const free = await Promise.all(Array.from({ length: opts.runs }, () => target.openRun(opts.runOptions)))
  const all = [...free]
  const latencies: number[] = []
  const sentAts: number[] = []
  const inFlight = new Set<Promise<void>>()
  let errors = 0
  let dropped = 0
  let n = 0
  const start = performance.now()
  const windowStart = start + opts.warmupMs
  const end = windowStart + opts.windowMs

  const fire = (): void => {
    const runId = free.pop()
    if (runId === undefined) {
      dropped++
      return
    }
    const sentAt = performance.now()
    const p: Promise<void> = target.send(runId, lookCalls(opts.batchSize, n++)).then((answer) => {
      if (!answer.ok) errors++
      else if (sentAt >= windowStart) {
        latencies.push(performance.now() - sentAt)
        sentAts.push(performance.timeOrigin + sentAt)
      }
    }, () => { errors++ }).finally(() => {
      free.push(runId)
      inFlight.delete(p)
    })
    inFlight.add(p)
  }

  let sent = 0
  for (let now = performance.now(); now < end; now = performance.now()) {
    const due = Math.floor(((now - start) * opts.rate) / 1000)
    while (sent < due) {
      sent++
      fire()
    }
    await sleep(1)
  }
  await Promise.all(inFlight)
  await Promise.all(all.map((id) => target.closeRun(id)))
  return { latencies, sentAt: sentAts, errors, dropped }
}
