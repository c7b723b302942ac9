import { type ActionContext, type ActionOutcome, actionResult, interpretActionAnswer, receiptCall } from './dispatch-action.js'
import { sendToExecutor } from './dispatch-call.js'
import type { PreparedCall } from '../model/call.js'
import { dispatchTiming, pendingReceipt, retriedReceipt } from '../receipts/lifecycle.js'
import type { Receipt } from '../model/receipt.js'
import type { DispatchOutcome } from '../schedule/types.js'

/**
 * The retry of an idempotent action tool's uncertain write: sent under the
 * original operation id (so the same Idempotency-Key), its answer settles
 * the original receipt in place (`retried` in the timeline, one more
 * attempt). A receipt that something else settled meanwhile stays as it
 * is, and is what the call shows. A retry that could not be sent settles
 * nothing.
 */
export async function retryAction (ctx: ActionContext, call: PreparedCall, operationId: string, preparedAt: string,
  trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<DispatchOutcome<ActionOutcome>> {
  const dispatchedAt = new Date()
  const t0 = performance.now()
  const answer = await sendToExecutor(ctx, call, operationId, trace, argumentsJson)
  const pending = (at: string): Receipt => pendingReceipt(receiptCall(ctx, call), operationId, preparedAt, at, ctx.approvedAt)
  if (answer.kind === 'unsent') {
    // Never sent: nothing is known of the original dispatch, so its receipt stays uncertain (and the uncertainty open).
    const stored = (await ctx.store.getReceipt(operationId).catch(() => undefined))?.receipt ?? pending(dispatchedAt.toISOString())
    return await actionResult(ctx, call, operationId, stored, stored)
  }
  const outcome = interpretActionAnswer(answer)
  const timing = dispatchTiming(dispatchedAt, performance.now() - t0)
  let receipt: Receipt | undefined
  try {
    receipt = await ctx.store.reviseReceipt(operationId, (r) => retriedReceipt(r, outcome, timing))
    // The original receipt is gone (past retention): this answer starts the operation's journal entry again.
    const { status, result, stateRevision } = outcome
    receipt ??= await ctx.store.putReceipt({ ...pending(timing.dispatchedAt), status, result, stateRevision, timing }, ctx.tenant, undefined, ctx.runCreatedAt)
  } catch {
    // Not recorded: the call still says what the executor answered.
    receipt = retriedReceipt(pending(timing.dispatchedAt), outcome, timing)!
  }
  return await actionResult(ctx, call, operationId, receipt, receipt)
}
