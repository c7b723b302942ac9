/**
 * Every call result of a batch answer is built here: `callResult` makes the
 * object (one shape, one key order, the canonical tool name when the model
 * used an alias), and the named builders below give each way a call can end
 * without an executor's answer its content and details.
 */
import type { PreparationOutcome, RejectionReason } from './call.js'
import { CANCELLED_MESSAGE, CLOSED_MESSAGE, blockedMessage, errorContent, unresolvedWriteMessage } from './content.js'
import type { CallDetails, CallResult, CallStatus } from './result.js'
import type { TerminationReason } from './run.js'
import type { Uncertainty } from './uncertainty.js'
import type { Decision } from './waiting.js'

/** The call a result answers: its id, the name the model used and the tool it resolved to, if any. */
type AnsweredCall = Pick<PreparationOutcome, 'id' | 'requestedName' | 'tool'>

/**
 * The one constructor of a call's result. `details` are the call's own, made
 * for it: completed in place, never copied, so the hot path builds one object.
 */
export function callResult (call: AnsweredCall, status: CallStatus, content: string, details: CallDetails, isError = true): CallResult {
  if (call.tool !== null && call.tool.name !== call.requestedName) details.tool = call.tool.name
  return { callId: call.id, name: call.requestedName, status, content, isError, details }
}

/** A call refused by preparation. */
export function rejectedResult (call: AnsweredCall & { reason: RejectionReason, message: string }): CallResult {
  return callResult(call, 'rejected', errorContent(call.reason, call.message), { reason: call.reason, message: call.message })
}

/** Why a run's rule (a loop kind or a run limit) terminated the run during a batch. */
export type StopReason = TerminationReason

/** The text of a call not run for a reason no rule gave a text of (src/guards/types.ts, `Guard.stops`). */
const STOPPED_MESSAGE = 'Not run: the run was stopped.'

/** A call not dispatched because the run ended (a loop kind or a run limit); `message` is what the rule that stopped it says. */
export function terminatedResult (call: AnsweredCall, reason: StopReason, message: string = STOPPED_MESSAGE): CallResult {
  return callResult(call, 'terminated', errorContent('terminated', message, { reason }), { reason })
}

/** A call that never started. `reason` says why: cancelled, timeout, client_gone, batch_closed, run_not_active. */
export function cancelledResult (call: AnsweredCall, reason: string, epoch?: number): CallResult {
  const details: CallDetails = { reason }
  if (epoch !== undefined) details.epoch = epoch
  return callResult(call, 'cancelled', errorContent('cancelled', reason === 'batch_closed' ? CLOSED_MESSAGE : CANCELLED_MESSAGE), details)
}

/** A write not dispatched because an earlier write of the batch has an unknown outcome. */
export function blockedResult (call: AnsweredCall, blockedBy: string, epoch: number): CallResult {
  return callResult(call, 'blocked', errorContent('blocked', blockedMessage(blockedBy), { blockedBy }), { epoch, blockedBy, reason: 'uncertain_write' })
}

/** A write not dispatched because the same write, sent in an earlier batch, has an unknown outcome (SPEC section 14). */
export function uncertainBlockedResult (call: AnsweredCall, by: Uncertainty): CallResult {
  const content = errorContent('unresolved_uncertain_write', unresolvedWriteMessage(by.callId), { blockedBy: by.callId })
  return callResult(call, 'blocked', content, { reason: 'unresolved_uncertain_write', blockedBy: by.callId, blockedByOperation: by.operationId })
}

const EXPIRED_MESSAGE = 'Not run: this call needed a person\'s approval and no one decided in time. Do not assume it happened.'

/** A held call a person declined, or no one decided in time: never dispatched (SPEC section 13). */
export function deniedResult (call: AnsweredCall, decision: Decision): CallResult {
  const expired = decision.expired === true
  const message = expired ? EXPIRED_MESSAGE : 'Not run: a person declined this call.'
  const content = expired
    ? errorContent('denied', message, { reason: 'approval_expired' })
    : errorContent('denied', message, decision.reason === undefined ? {} : { reason: decision.reason })
  return callResult(call, 'denied', content, { reason: expired ? 'approval_expired' : 'denied' })
}

/** Why a call did not succeed, for spans and logs: a reason code, a cause or an HTTP status. */
export function reasonOf (d: CallDetails): string | undefined {
  return d.reason ?? d.cause ?? (d.httpStatus !== undefined && d.httpStatus >= 300 ? String(d.httpStatus) : undefined)
}
