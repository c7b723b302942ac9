import { initialLoopState } from '../repeat/loops.js'
import { resetRepeats } from '../repeat/tracker.js'
import type { RunOptions, RunRecord } from '../model/run.js'

/** A new, active run record with nothing counted yet: what POST /v1/runs stores. */
export function newRunRecord (runId: string, tenant: string, options: RunOptions, now: number): RunRecord {
  return {
    runId,
    tenant,
    state: 'active',
    terminationReason: null,
    options,
    counters: { turns: 0, toolCalls: 0, totalTokens: 0 },
    repeat: resetRepeats(),
    loops: initialLoopState(),
    admitted: null,
    inFlight: null,
    stats: null,
    createdAt: now,
    lastActiveAt: now
  }
}

