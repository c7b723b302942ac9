/**
 * The life of an action's receipt (SPEC section 7), as pure functions from
 * a receipt and what happened to the receipt that follows. A dispatch
 * stores the pending receipt before it sends (status `uncertain`: the action
 * may happen from then on), then settles it with the executor's answer; a
 * call whose operation has a receipt already shows it again, `replayed`. An
 * uncertain receipt is settled later by an idempotent retry's answer, by its
 * status URL or by hand, and a settled receipt is never rewritten. Storing
 * them is the callers' part (src/batch/dispatch-action.ts,
 * src/batch/retry-action.ts and src/uncertain/service.ts).
 */
import type { Receipt, ReceiptStatus } from '../model/receipt.js'

/** Why a pending receipt's outcome is unknown: the dispatch that wrote it never recorded an answer (its replica died, or the store failed). */
export const NO_ANSWER_RECORDED = 'no_answer_recorded'

/** The call a receipt is about. */
export interface ReceiptCall {
  runId: string
  batchId: string
  callId: string
  /** The canonical tool name. */
  tool: string
  arguments: Record<string, unknown>
}

/** An executor's answer as a receipt records it (src/batch/interpret.ts gives an answer this meaning). */
export interface AnsweredOutcome {
  status: ReceiptStatus
  result: Record<string, unknown> | null
  stateRevision: string | number | null
  /** The timeline event that ends the exchange: responded, timed_out or failed. */
  end: string
}

/** What a person or a status URL says of an uncertain operation. */
export interface ResolvedOutcome {
  status: Exclude<ReceiptStatus, 'uncertain'>
  result?: Record<string, unknown>
  stateRevision?: string | number
}

export type DispatchTiming = Receipt['timing']

/** The timing of an exchange that started at `dispatchedAt` and took `durationMs`. */
export function dispatchTiming (dispatchedAt: Date, durationMs: number): DispatchTiming {
  return {
    dispatchedAt: dispatchedAt.toISOString(),
    completedAt: new Date(dispatchedAt.getTime() + durationMs).toISOString(),
    durationMs: Math.round(durationMs * 1000) / 1000
  }
}

/**
 * The receipt of a dispatch about to be sent: its outcome unknown until the
 * executor answers. It has no completion, so `completedAt` is `dispatchedAt`
 * and `durationMs` 0. `approvedAt` when a person approved the call (SPEC
 * section 13).
 */
export function pendingReceipt (call: ReceiptCall, operationId: string, preparedAt: string, dispatchedAt: string, approvedAt?: string): Receipt {
  return {
    operationId,
    runId: call.runId,
    batchId: call.batchId,
    callId: call.callId,
    tool: call.tool,
    intent: { action: call.tool, arguments: call.arguments },
    status: 'uncertain',
    result: { error: 'outcome_unknown', cause: NO_ANSWER_RECORDED },
    stateRevision: null,
    timeline: approvedAt === undefined
      ? [{ event: 'prepared', at: preparedAt }, { event: 'dispatched', at: dispatchedAt }]
      : [{ event: 'prepared', at: preparedAt }, { event: 'approved', at: approvedAt }, { event: 'dispatched', at: dispatchedAt }],
    dispatch: { disposition: 'dispatched', attempts: 1 },
    timing: { dispatchedAt, completedAt: dispatchedAt, durationMs: 0 }
  }
}

/** The pending receipt settled by the executor's answer to its dispatch. */
export function answeredReceipt (pending: Receipt, outcome: AnsweredOutcome, timing: DispatchTiming): Receipt {
  return {
    ...pending,
    status: outcome.status,
    result: outcome.result,
    stateRevision: outcome.stateRevision,
    timeline: [...pending.timeline, { event: outcome.end, at: timing.completedAt }],
    timing
  }
}

/** A stored receipt as a call whose operation had one shows it: not sent again. */
export function replayedReceipt (stored: Receipt): Receipt {
  return { ...stored, dispatch: { ...stored.dispatch, disposition: 'replayed' } }
}

/**
 * An uncertain receipt settled in place by an idempotent retry's answer:
 * `retried` in its timeline and one more attempt. Undefined when it is no
 * longer uncertain (something else settled it first).
 */
export function retriedReceipt (receipt: Receipt, outcome: AnsweredOutcome, timing: DispatchTiming): Receipt | undefined {
  if (receipt.status !== 'uncertain') return undefined
  return {
    ...receipt,
    status: outcome.status,
    result: outcome.result,
    stateRevision: outcome.stateRevision,
    timeline: [...receipt.timeline, { event: 'retried', at: timing.dispatchedAt }, { event: outcome.end, at: timing.completedAt }],
    dispatch: { disposition: 'dispatched', attempts: receipt.dispatch.attempts + 1 },
    timing
  }
}

/** The timeline event and disposition each way of resolving leaves on an action's receipt. */
const RESOLUTION_MARKS: Record<'status_url' | 'manual', { event: string, disposition: Receipt['dispatch']['disposition'] }> = {
  status_url: { event: 'recovered', disposition: 'recovered' },
  manual: { event: 'resolved', disposition: 'resolved' }
}

/**
 * An uncertain receipt settled by its status URL or by hand; undefined when
 * the receipt is not uncertain any more (another resolution came first), so
 * a settled receipt is never rewritten.
 */
export function resolvedReceipt (receipt: Receipt, outcome: ResolvedOutcome, how: 'status_url' | 'manual', at: string): Receipt | undefined {
  if (receipt.status !== 'uncertain') return undefined
  const mark = RESOLUTION_MARKS[how]
  return {
    ...receipt,
    status: outcome.status,
    result: outcome.result ?? {},
    stateRevision: outcome.stateRevision ?? receipt.stateRevision,
    timeline: [...receipt.timeline, { event: mark.event, at }],
    dispatch: { disposition: mark.disposition, attempts: receipt.dispatch.attempts }
  }
}
