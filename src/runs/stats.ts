import type { LoopCounts, RunStats } from '../model/run.js'
import { STREAK_KINDS } from '../model/loops.js'

export function emptyStats (): RunStats {
  return {
    epochs: 0,
    largestEpoch: 0,
    callsByStatus: {},
    toolTimeMs: 0,
    wallTimeMs: 0,
    repeatAdvisories: 0,
    repeatTerminations: 0,
    projectionFailures: 0,
    uncertainWrites: 0,
    blockedCalls: 0
  }
}

/** Every detector's counts at zero (made with a batch's or run's first detection). */
export function emptyLoopCounts (): LoopCounts {
  const counts: Partial<LoopCounts> = {}
  for (const kind of STREAK_KINDS) counts[kind] = { advisories: 0, terminations: 0 }
  return counts as LoopCounts
}

/** Adds one batch's figures to a running total (a run's, or the process's), in place; answers the total. */
export function addStats (total: RunStats, b: RunStats): RunStats {
  const byStatus = total.callsByStatus
  for (const k in b.callsByStatus) byStatus[k] = (byStatus[k] ?? 0) + b.callsByStatus[k]!
  total.epochs += b.epochs
  total.largestEpoch = Math.max(total.largestEpoch, b.largestEpoch)
  total.toolTimeMs += b.toolTimeMs
  total.wallTimeMs += b.wallTimeMs
  total.repeatAdvisories += b.repeatAdvisories
  total.repeatTerminations += b.repeatTerminations
  total.projectionFailures += b.projectionFailures
  total.uncertainWrites += b.uncertainWrites
  total.blockedCalls += b.blockedCalls
  if (b.approvals !== undefined) {
    const a = total.approvals ?? (total.approvals = { approved: 0, denied: 0, expired: 0 })
    a.approved += b.approvals.approved
    a.denied += b.approvals.denied
    a.expired += b.approvals.expired
  }
  if (b.loops !== undefined) {
    // Made with the first detection: most batches and runs have none.
    const loops = (total.loops ??= emptyLoopCounts())
    for (const kind of STREAK_KINDS) {
      loops[kind].advisories += b.loops[kind].advisories
      loops[kind].terminations += b.loops[kind].terminations
    }
  }
  return total
}
