import { type ActionContext, type ActionOutcome, actionResult } from '../batch/dispatch-action.js'
import type { PreparedCall } from '../prepare/types.js'
import type { DispatchOutcome } from '../schedule/types.js'
import type { Committed } from './types.js'

/** `details.reason` of a retry answered with the outcome its earlier send was found to have. */
export const ALREADY_COMMITTED = 'already_committed'

export function committedMessage (earlier: string): string {
  return `Not sent again: this same call was sent before (${earlier}); its outcome was unknown then, and it has since been found to have taken effect. ` +
    'This is its outcome. Send the call again only if you mean to do it a second time.'
}

/**
 * The model's retry of a write that was uncertain when it last heard of it
 * and has been found committed since: nothing is sent. The model gets that
 * outcome (an action its settled receipt, shown as replayed), so it learns
 * what happened; an identical call after this one is a plain new call.
 */
export async function answerCommitted (ctx: ActionContext, call: PreparedCall, done: Committed): Promise<DispatchOutcome<ActionOutcome>> {
  const { operationId, callId } = done.uncertainty
  const stored = call.tool.action === null ? undefined : (await ctx.store.getReceipt(operationId).catch(() => undefined))?.receipt
  if (stored !== undefined) {
    const outcome = await actionResult(ctx, call, operationId, stored, { ...stored, dispatch: { ...stored.dispatch, disposition: 'replayed' } })
    Object.assign(outcome.value.details, { reason: ALREADY_COMMITTED, repeatOf: callId })
    return outcome
  }
  const content = JSON.stringify({ status: 'committed', message: committedMessage(callId), repeatOf: callId, ...(done.result === undefined ? {} : { result: done.result }) })
  return { value: { status: 'ok', content, isError: false, details: { operationId, reason: ALREADY_COMMITTED, repeatOf: callId } }, uncertain: false, closeBatch: false }
}
