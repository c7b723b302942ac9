import type { RunStats } from '../model/run.js'
import { LOOP_KIND_LIST } from '../repeat/kinds/index.js'
import { emptyLoopCounts } from '../repeat/loops.js'

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
    const loops = (total.loops ??= emptyLoopCounts(LOOP_KIND_LIST))
    for (const kind in b.loops) {
      const add = b.loops[kind]!
      const to = (loops[kind] ??= { advisories: 0, terminations: 0 })
      to.advisories += add.advisories
      to.terminations += add.terminations
    }
  }
  return total
}
