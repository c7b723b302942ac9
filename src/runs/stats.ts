import type { RunStats } from './types.js'

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

/** Sums two sets of figures (a run's so far and one batch's). */
export function addStats (a: RunStats, b: RunStats): RunStats {
  const callsByStatus = { ...a.callsByStatus }
  for (const [k, v] of Object.entries(b.callsByStatus)) callsByStatus[k] = (callsByStatus[k] ?? 0) + v
  return {
    epochs: a.epochs + b.epochs,
    largestEpoch: Math.max(a.largestEpoch, b.largestEpoch),
    callsByStatus,
    toolTimeMs: a.toolTimeMs + b.toolTimeMs,
    wallTimeMs: a.wallTimeMs + b.wallTimeMs,
    repeatAdvisories: a.repeatAdvisories + b.repeatAdvisories,
    repeatTerminations: a.repeatTerminations + b.repeatTerminations,
    projectionFailures: a.projectionFailures + b.projectionFailures,
    uncertainWrites: a.uncertainWrites + b.uncertainWrites,
    blockedCalls: a.blockedCalls + b.blockedCalls
  }
}
