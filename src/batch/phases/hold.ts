/**
 * The hold phase (SPEC section 13): once every call is prepared, a batch
 * with a call a guard screens `hold` (src/guards/approvals.ts: a tool that
 * requires approval) is not run. That guard stores its state (`storedState`,
 * with the calls it holds), atomically with the run, and it is answered 202;
 * whichever request or replica decides its last call loads it and runs it
 * on from the admit phase (`BatchEngine.takeUpWaiting`).
 */
import { performance } from 'node:perf_hooks'
import { round } from '../../events/recorder.js'
import { screenThrough } from '../../guards/admission.js'
import type { BatchGuard } from '../../guards/types.js'
import type { BatchAnswer } from '../engine-types.js'
import { respond } from '../respond.js'
import type { BatchRuntime } from '../runtime.js'
import type { BatchState, Ready } from '../state.js'
import { storedState } from '../stored-state.js'

/** Whether a guard holds a call of the batch. */
export function mayHold (guards: readonly BatchGuard[], size: number): boolean {
  return screenThrough(guards, size)?.some((v) => v.kind === 'hold') ?? false
}

/**
 * The hold phase: null when nothing is held (no call screened `hold`, the
 * batch stopped), or when the run left `active` or the lease was lost
 * meanwhile: the batch then goes on as any batch does. Answers a promise
 * only when it holds the batch.
 */
export function hold (state: BatchState, rt: BatchRuntime, ready: Ready): Promise<BatchAnswer | null> | null {
  if (rt.controller.aborted || !mayHold(ready.guards, ready.prepared.outcomes.length)) return null
  return store(state, rt, ready)
}

/** The first guard that holds the batch stores its state; its 202. */
async function store (state: BatchState, rt: BatchRuntime, ready: Ready): Promise<BatchAnswer | null> {
  for (const g of ready.guards) {
    if (g.hold === undefined) continue
    const held = await g.hold(rt.view, (approvals) => storedState(state, approvals))
    if (held === null) continue
    state.approvals = held.waiting.state.approvals
    const durationMs = performance.now() - rt.startedAt
    rt.observer.batchCompleted('awaiting_approval', durationMs)
    return {
      body: respond(state, rt, { held }),
      replayed: false,
      status: 202,
      log: { runId: state.runId, batchId: state.batchId, turn: state.turn, calls: ready.prepared.outcomes.length, outcome: 'awaiting_approval', held: held.held, durationMs: round(durationMs) }
    }
  }
  return null
}
