import type { Executor, ExecutorAnswer } from '../dispatch/executor.js'
import type { PreparedCall } from '../model/call.js'
import type { DispatchOutcome } from '../schedule/types.js'
import { type PlainOutcome, interpretAnswer } from './interpret.js'

/** What every call's dispatch in a batch needs besides the call: made once per batch. */
export interface DispatchContext {
  runId: string
  batchId: string
  /** The run's tenant: whose turn an executor's own bounded work (an MCP answer's check) takes. */
  tenant: string
  /** The executor of tools that name none of their own: toolgate's HTTP executor protocol. */
  http: Executor
  /** Told each progress report of a call's executor (an MCP server's), numbers only: the batch's `call.progress` event. */
  onProgress?: (call: PreparedCall, update: { progress: number, total?: number | undefined }) => void
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
  const sent = send(ctx, call, operationId, trace, argumentsJson)
  const onAnswer = ctx.onAnswer
  if (onAnswer === undefined) return sent
  return sent.then((answer) => {
    told(onAnswer, call, answer)
    return answer
  })
}

/** The call handed to its executor: the tool's own (an MCP server's), else the batch's HTTP one. */
function send (ctx: DispatchContext, call: PreparedCall, operationId: string,
  trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<ExecutorAnswer> {
  const executor = call.tool.executor.via ?? ctx.http
  const progress = ctx.onProgress
  // Only a tool's own executor (an MCP server's) reports progress: the HTTP executor's calls make no listener.
  const onProgress = progress === undefined || call.tool.executor.via === undefined ? undefined : (update: { progress: number, total?: number | undefined }): void => { progress(call, update) }
  return executor.send({ runId: ctx.runId, batchId: ctx.batchId, tenant: ctx.tenant, call, operationId, trace, argumentsJson, onProgress })
}

/** Tells `onAnswer` an answer; telemetry never changes what a call does. */
function told (onAnswer: NonNullable<DispatchContext['onAnswer']>, call: PreparedCall, answer: ExecutorAnswer): void {
  try { onAnswer(call, answer) } catch { /* ignored */ }
}

/**
 * Dispatches a plain (non-action) tool call and settles it for the runner
 * (`trace` and `argumentsJson` as sendToExecutor takes them). One
 * continuation per call: its answer told, given its meaning and settled in
 * the same step. A throw while sending is thrown: the runner and the
 * guarded send settle a dispatch that throws as the call's failure.
 */
export function dispatchPlain (ctx: DispatchContext, call: PreparedCall, operationId: string,
  trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<DispatchOutcome<PlainOutcome>> {
  const onAnswer = ctx.onAnswer
  return send(ctx, call, operationId, trace, argumentsJson).then((answer) => {
    if (onAnswer !== undefined) told(onAnswer, call, answer)
    const outcome = interpretAnswer(answer, call.tool.readOnly)
    outcome.details.operationId = operationId
    return { value: outcome, uncertain: outcome.status === 'uncertain', closeBatch: false }
  })
}
