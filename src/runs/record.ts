import { resetRepeats } from '../repeat/exact.js'
import { LOOP_KIND_LIST } from '../repeat/kinds/index.js'
import { initialLoopState } from '../repeat/loops.js'
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
    loops: initialLoopState(LOOP_KIND_LIST),
    admitted: null,
    inFlight: null,
    stats: null,
    createdAt: now,
    lastActiveAt: now
  }
}

