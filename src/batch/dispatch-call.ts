import { type DispatchContext as ExecutorContext, type ExecutorAnswer, executorOf } from '../dispatch/executor.js'
import type { PreparedCall } from '../model/call.js'
import type { DispatchOutcome } from '../schedule/types.js'
import { type PlainOutcome, interpretAnswer } from './interpret.js'

/** The executor port's context, with what the batch itself listens for. */
export interface DispatchContext extends ExecutorContext {
  /** Told every answer as it comes, before it is given its meaning (telemetry reads why an exchange failed). */
  onAnswer?: (call: PreparedCall, answer: ExecutorAnswer) => void
}
export { type PlainOutcome, interpretAnswer } from './interpret.js'

/**
 * Sends one call to its executor, whichever kind it is. Never rejects.
 * `trace` holds the trace context headers of the call; `argumentsJson` is
 * JSON.stringify of its arguments, when known already.
 */
export function sendToExecutor (ctx: DispatchContext, call: PreparedCall, operationId: string,
  trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<ExecutorAnswer> {
  const sent = executorOf(ctx, call).send(ctx, call, operationId, trace, argumentsJson)
  const onAnswer = ctx.onAnswer
  if (onAnswer === undefined) return sent
  return sent.then((answer) => {
    // Telemetry never changes what a call does.
    try { onAnswer(call, answer) } catch { /* ignored */ }
    return answer
  })
}

/** Dispatches a plain (non-action) tool call and settles it for the runner (`trace` and `argumentsJson` as sendToExecutor takes them). */
export async function dispatchPlain (ctx: DispatchContext, call: PreparedCall, operationId: string,
  trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<DispatchOutcome<PlainOutcome>> {
  const outcome = interpretAnswer(await sendToExecutor(ctx, call, operationId, trace, argumentsJson), call.tool.readOnly)
  outcome.details.operationId = operationId
  return { value: outcome, uncertain: outcome.status === 'uncertain', closeBatch: false }
}
