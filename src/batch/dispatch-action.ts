import { randomUUID } from 'node:crypto'
import type { PreparedCall } from '../model/call.js'
import { type ReceiptCall, answeredReceipt, dispatchTiming, pendingReceipt, replayedReceipt } from '../receipts/lifecycle.js'
import { projectReceipt } from '../receipts/projection.js'
import type { Receipt } from '../model/receipt.js'
import type { DispatchOutcome } from '../schedule/types.js'
import type { Store } from '../store/types.js'
import { type DispatchContext, type PlainOutcome, sendToExecutor } from './dispatch-call.js'
import { actionCallStatus, interpretActionAnswer } from './interpret.js'
import { errorContent } from '../model/content.js'

/** An action call's settled result: a plain outcome, or a projection that failed. */
export interface ActionOutcome {
  /** `blocked`, `cancelled` and a plain `error`: a guard kept the call from being sent (its `acquire`, src/guards). */
  status: PlainOutcome['status'] | 'projection_failed' | 'blocked' | 'cancelled'
  content: string
  isError: boolean
  details: PlainOutcome['details']
}

const PROJECTION_FAILED_CONTENT = '{"error":"projection_failed"}'

export interface ActionContext extends DispatchContext {
  store: Store
  /** The creation time of the run the batch runs in: with the tenant, its incarnation, which every receipt it writes carries (SPEC section 19). */
  runCreatedAt: number
  onProjectionFailed?: (problem: string) => void
  /** When a person approved the call (SPEC section 13), for the receipt's timeline. */
  approvedAt?: string
}

const NOT_JOURNALLED_MESSAGE = 'The action was not performed: its operation could not be recorded before sending, so it was not sent. Nothing changed; it may be retried.'

/**
 * Dispatches an action tool call: at most once per operation id. Before the
 * request is sent, a pending receipt (status `uncertain`) is stored, first
 * writer wins; a call whose operation has a receipt already, pending or
 * final, is answered from it (`replayed`) and not sent. Once the executor
 * answers, the final receipt replaces this dispatch's pending one and is
 * projected for the model. If that write fails, the pending receipt stays:
 * the action may have happened, and a resent call says so. `trace` and
 * `argumentsJson` are as sendToExecutor takes them.
 */
export async function dispatchAction (ctx: ActionContext, call: PreparedCall, operationId: string, preparedAt: string,
  trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<DispatchOutcome<ActionOutcome>> {
  const dispatchedAt = new Date()
  const t0 = performance.now()
  const pending = pendingReceipt(receiptCall(ctx, call), operationId, preparedAt, dispatchedAt.toISOString(), ctx.approvedAt)
  const token = randomUUID()
  let stored: Receipt
  try {
    stored = await ctx.store.putReceipt(pending, ctx.tenant, token, ctx.runCreatedAt)
  } catch {
    // Nothing was sent: an action is never sent before its operation is journalled. A definitive error, blocking nothing.
    return {
      value: { status: 'error', content: errorContent('store_unavailable', NOT_JOURNALLED_MESSAGE), isError: true, details: { cause: 'store_unavailable', operationId } },
      uncertain: false,
      closeBatch: false
    }
  }
  let receipt: Receipt
  let shown: Receipt
  if (stored !== pending) {
    receipt = stored
    shown = replayedReceipt(stored)
  } else {
    const answer = await sendToExecutor(ctx, call, operationId, trace, argumentsJson)
    receipt = answeredReceipt(pending, interpretActionAnswer(answer), dispatchTiming(dispatchedAt, performance.now() - t0))
    // False only when the pending receipt went meanwhile (evicted or expired): this receipt is still what happened.
    await ctx.store.settleReceipt(receipt, ctx.tenant, token)
    shown = receipt
  }
  return await actionResult(ctx, call, operationId, receipt, shown)
}

/**
 * An action call's result from its receipt: the model sees the canonical
 * receipt, or its projection; `shown` is the receipt as details show it
 * (a replay says `replayed`).
 */
export async function actionResult (ctx: ActionContext, call: PreparedCall, operationId: string, receipt: Receipt, shown: Receipt): Promise<DispatchOutcome<ActionOutcome>> {
  const callStatus = actionCallStatus(receipt.status)
  const details: ActionOutcome['details'] = { operationId, receipt: shown }
  // As for a plain tool: a call that could not be sent says so in the reason the host reads.
  if (receipt.status === 'failed' && receipt.result?.error === 'executor_unavailable') details.reason = 'executor_unavailable'
  const projection = call.tool.action?.projection ?? null
  if (projection === null) {
    // The receipt as first stored, so a replay shows the model the same bytes.
    const content = JSON.stringify(receipt)
    return { value: { status: callStatus, content, isError: callStatus !== 'ok', details }, uncertain: callStatus === 'uncertain', closeBatch: false }
  }
  const { dispatch: _d, timing: _t, ...stable } = receipt
  const check = await projectReceipt(projection, { intent: receipt.intent, receipt: stable }, call.tool.action!.maxModelReceiptChars, ctx.tenant)
  if (!check.ok) {
    ctx.onProjectionFailed?.(check.problem)
    return {
      value: { status: 'projection_failed', content: PROJECTION_FAILED_CONTENT, isError: true, details: { ...details, projectionProblem: check.problem } },
      uncertain: receipt.status === 'uncertain',
      closeBatch: true
    }
  }
  return { value: { status: callStatus, content: check.content, isError: callStatus !== 'ok', details }, uncertain: callStatus === 'uncertain', closeBatch: false }
}

/** The call as its receipt names it. */
export function receiptCall (ctx: ActionContext, call: PreparedCall): ReceiptCall {
  return { runId: ctx.runId, batchId: ctx.batchId, callId: call.id, tool: call.tool.name, arguments: call.arguments }
}

export { interpretActionAnswer } from './interpret.js'
