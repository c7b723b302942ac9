import { resetRepeats } from '../repeat/tracker.js'
import type { RunOptions, RunRecord } from './types.js'

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
    batches: null,
    inFlight: null,
    stats: null,
    createdAt: now,
    lastActiveAt: now
  }
}

/** A run record as JSON text, for a store that keeps text: its batch ids as an object. */
export function runToJson (run: RunRecord): string {
  return JSON.stringify({ ...run, batches: run.batches === null ? null : Object.fromEntries(run.batches) })
}

/** A run record read back from runToJson's text. */
export function runFromJson (text: string): RunRecord {
  const run = JSON.parse(text) as Omit<RunRecord, 'batches'> & { batches: Record<string, string> | null }
  return { ...run, batches: run.batches === null ? null : new Map(Object.entries(run.batches)) }
}
