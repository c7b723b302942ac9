import { type ActionContext, type ActionOutcome, actionResult, interpretActionAnswer, pendingReceipt } from '../batch/dispatch-action.js'
import { sendToExecutor } from '../batch/dispatch-call.js'
import type { PreparedCall } from '../prepare/types.js'
import type { Receipt } from '../receipts/types.js'
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
  if (answer.kind === 'unsent') {
    // Never sent: nothing is known of the original dispatch, so its receipt stays uncertain (and the uncertainty open).
    const stored = (await ctx.store.getReceipt(operationId).catch(() => undefined))?.receipt ?? pendingReceipt(ctx, call, operationId, preparedAt, dispatchedAt.toISOString())
    return await actionResult(ctx, call, operationId, stored, stored)
  }
  const durationMs = performance.now() - t0
  const completedAt = new Date(dispatchedAt.getTime() + durationMs).toISOString()
  const { status, result, stateRevision, end } = interpretActionAnswer(answer)
  const timing = { dispatchedAt: dispatchedAt.toISOString(), completedAt, durationMs: Math.round(durationMs * 1000) / 1000 }
  const settle = (r: Receipt): Receipt | undefined => r.status !== 'uncertain'
    ? undefined
    : {
        ...r,
        status,
        result,
        stateRevision,
        timeline: [...r.timeline, { event: 'retried', at: timing.dispatchedAt }, { event: end, at: completedAt }],
        dispatch: { disposition: 'dispatched', attempts: r.dispatch.attempts + 1 },
        timing
      }
  let receipt: Receipt | undefined
  try {
    receipt = await ctx.store.reviseReceipt(operationId, settle)
    // The original receipt is gone (past retention): this answer starts the operation's journal entry again.
    receipt ??= await ctx.store.putReceipt({ ...pendingReceipt(ctx, call, operationId, preparedAt, timing.dispatchedAt), status, result, stateRevision, timing }, ctx.tenant)
  } catch {
    // Not recorded: the call still says what the executor answered.
    receipt = settle(pendingReceipt(ctx, call, operationId, preparedAt, timing.dispatchedAt))!
  }
  return await actionResult(ctx, call, operationId, receipt, receipt)
}
