/**
 * Makespan and safety at speed: batches of calls that sleep a known time at
 * the executor, sent one at a time, each batch's latency compared with what
 * its constraints allow. Same-key overlaps are counted by the executor.
 */
import { performance } from 'node:perf_hooks'
import { request } from 'undici'
import type { BenchCall, Target } from './clients.js'
import { assertAllOk } from './clients.js'
import type { BenchResults } from './results.js'
import { type BenchSettings, TARGETS } from './settings.js'
import { median, sig, sum } from './stats.js'
import { type SleepBatch, greedyMakespan, lowerBound, makespanBatches, safetyBatches, withoutKeys } from './workloads.js'

const NO_REPEAT_LIMITS = { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0 }

function callsOf (batch: SleepBatch): BenchCall[] {
  return batch.calls.map((c, i) => ({ id: `call_${i}`, name: c.tool, arguments: c.key === undefined ? { ms: c.ms, n: i } : { ms: c.ms, key: c.key, n: i } }))
}

async function executorStats (executorUrl: string): Promise<{ overlaps: number, keyed: number }> {
  const res = await request(`${executorUrl}/stats`)
  return await res.body.json() as { overlaps: number, keyed: number }
}

/**
 * The executor's own cost per call, outside its sleep: the median of
 * (round trip − sleep) for single calls sent directly. The bound charges it
 * to every call, since no service can avoid it.
 */
export async function executorOverheadMs (direct: Target, sleepMs: number, samples: number): Promise<number> {
  const over: number[] = []
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now()
    const answer = await direct.send('calibration', [{ id: 'c', name: 'm_read', arguments: { ms: sleepMs, n: i } }])
    if (!answer.ok) throw new Error(`executor answered ${answer.status} during calibration`)
    over.push(performance.now() - t0 - sleepMs)
  }
  return median(over)
}

/** Sends one batch in its own fresh run; answers its latency in ms. */
async function timedBatch (toolgate: Target, batch: SleepBatch, mode: 'safeParallel' | 'parallel'): Promise<number> {
  const runId = await toolgate.openRun({ toolExecution: mode, maxConcurrentTools: batch.cap, limits: NO_REPEAT_LIMITS })
  const calls = callsOf(batch)
  const t0 = performance.now()
  const answer = await toolgate.send(runId, calls)
  const ms = performance.now() - t0
  assertAllOk('toolgate', answer, calls.length)
  await toolgate.closeRun(runId)
  return ms
}

interface MakespanRound {
  /** Σ measured / Σ lower bound. */
  measuredOverBound: number
  /** Σ toolgate's rule with no overhead / Σ lower bound: the part owed to the rule, not to the service. */
  ruleOverBound: number
  /** Worst single batch, measured / bound. */
  worstBatch: number
  overheadMs: number
  /** Same-key overlaps the executor saw (must be 0). */
  overlaps: number
}

async function makespanRound (toolgate: Target, direct: Target, executorUrl: string, batches: readonly SleepBatch[], calibrationMs: number): Promise<MakespanRound> {
  const overheadMs = await executorOverheadMs(direct, calibrationMs, 10)
  const before = await executorStats(executorUrl)
  const measured: number[] = []
  for (const batch of batches) measured.push(await timedBatch(toolgate, batch, 'safeParallel'))
  const after = await executorStats(executorUrl)
  const bounds = batches.map((b) => lowerBound(b, 'safeParallel', overheadMs))
  const rule = batches.map((b) => greedyMakespan(b, 'safeParallel', overheadMs))
  return {
    measuredOverBound: sum(measured) / sum(bounds),
    ruleOverBound: sum(rule) / sum(bounds),
    worstBatch: Math.max(...measured.map((m, i) => m / bounds[i]!)),
    overheadMs,
    overlaps: after.overlaps - before.overlaps
  }
}

interface SafetyRound {
  /** Σ safeParallel makespan / Σ all-parallel makespan. */
  safeOverParallel: number
  overlapsSafe: number
  overlapsParallel: number
  /** Keyed writes the executor saw in the all-parallel run. */
  keyedWritesParallel: number
}

async function safetyRound (toolgate: Target, executorUrl: string, batches: readonly SleepBatch[], round: number): Promise<SafetyRound> {
  const safe: number[] = []
  const open: number[] = []
  let overlapsSafe = 0
  let overlapsParallel = 0
  let keyedWritesParallel = 0
  for (const [i, batch] of batches.entries()) {
    // Alternate which mode goes first, so drift within a round cancels.
    const order = (i + round) % 2 === 0 ? ['safe', 'open'] as const : ['open', 'safe'] as const
    for (const which of order) {
      const before = await executorStats(executorUrl)
      if (which === 'safe') safe.push(await timedBatch(toolgate, batch, 'safeParallel'))
      else open.push(await timedBatch(toolgate, withoutKeys(batch), 'parallel'))
      const after = await executorStats(executorUrl)
      if (which === 'safe') overlapsSafe += after.overlaps - before.overlaps
      else {
        overlapsParallel += after.overlaps - before.overlaps
        keyedWritesParallel += after.keyed - before.keyed
      }
    }
  }
  return { safeOverParallel: sum(safe) / sum(open), overlapsSafe, overlapsParallel, keyedWritesParallel }
}

/** Measure 3: random constrained batches, measured against the lower bound their constraints allow. */
export async function measureMakespan (toolgate: Target, direct: Target, executorUrl: string, s: BenchSettings, log: (line: string) => void): Promise<BenchResults['makespan']> {
  const batches = makespanBatches(s.makespan.batches, s.makespan.seed, s.makespan.maxMs)
  const rounds: MakespanRound[] = []
  for (let round = 0; round < s.makespan.rounds; round++) {
    log(`makespan round ${round + 1}/${s.makespan.rounds}`)
    rounds.push(await makespanRound(toolgate, direct, executorUrl, batches, Math.round(s.makespan.maxMs / 2)))
  }
  const m = (f: (r: MakespanRound) => number): number => sig(median(rounds.map(f)))
  return {
    batches: batches.length,
    measuredOverBound: m((r) => r.measuredOverBound),
    ruleOverBound: m((r) => r.ruleOverBound),
    measuredOverRule: m((r) => r.measuredOverBound / r.ruleOverBound),
    worstBatch: m((r) => r.worstBatch),
    executorOverheadMs: m((r) => r.overheadMs),
    overlaps: sum(rounds.map((r) => r.overlaps)),
    target: TARGETS.makespanOverBound
  }
}

/** Measure 4: a read-heavy workload, safeParallel against an all-parallel run that ignores keys. */
export async function measureSafety (toolgate: Target, executorUrl: string, s: BenchSettings, log: (line: string) => void): Promise<BenchResults['safety']> {
  const batches = safetyBatches(s.safety.batches, s.safety.seed, s.safety.size, s.safety.maxMs, s.safety.keys)
  const rounds: SafetyRound[] = []
  for (let round = 0; round < s.safety.rounds; round++) {
    log(`safety round ${round + 1}/${s.safety.rounds}`)
    rounds.push(await safetyRound(toolgate, executorUrl, batches, round))
  }
  // No schedule that keeps same-key writes apart can beat this on these batches, however fast.
  const floor = sum(batches.map((b) => lowerBound(b, 'safeParallel', 0))) / sum(batches.map((b) => lowerBound(withoutKeys(b), 'parallel', 0)))
  return {
    batches: batches.length,
    callsPerBatch: s.safety.size,
    keys: s.safety.keys,
    safeOverParallel: sig(median(rounds.map((r) => r.safeOverParallel))),
    floorSafeOverParallel: sig(floor),
    overlapsParallel: sum(rounds.map((r) => r.overlapsParallel)),
    keyedWritesParallel: sum(rounds.map((r) => r.keyedWritesParallel)),
    overlapsToolgate: sum(rounds.map((r) => r.overlapsSafe)),
    target: TARGETS.safeOverParallel
  }
}
