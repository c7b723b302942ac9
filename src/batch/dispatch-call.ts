import type { ExecutorAnswer, ExecutorClient } from '../dispatch/client.js'
import { executorBody } from '../dispatch/executor-body.js'
import { IsoTime } from '../events/iso-time.js'
import type { PreparedCall } from '../prepare/types.js'
import type { DispatchOutcome } from '../schedule/types.js'
import type { CallDetails } from './types.js'
import { UNCERTAIN_MESSAGE, contentOf, errorContent } from './content.js'

/** What every call's dispatch in a batch needs besides the call: made once per batch. */
export interface DispatchContext {
  runId: string
  batchId: string
  /** The batch's executorBodyPrefix. */
  bodyPrefix: string
  client: ExecutorClient
}

/** What the executor said, given its tool-level meaning. */
export interface PlainOutcome {
  status: 'ok' | 'error' | 'uncertain'
  content: string
  isError: boolean
  details: CallDetails
}

const DEADLINES = new IsoTime()

/**
 * Sends one call to its executor. Never rejects. `trace` holds the trace
 * context headers of the call; `argumentsJson` is JSON.stringify of its
 * arguments, when known already.
 */
export function sendToExecutor (ctx: DispatchContext, call: PreparedCall, operationId: string,
  trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<ExecutorAnswer> {
  const timeoutMs = call.tool.executor.timeoutMs
  return ctx.client.post({
    url: call.tool.executor.url,
    timeoutMs,
    body: executorBody(ctx.bodyPrefix, call, operationId, DEADLINES.at(Date.now() + timeoutMs), argumentsJson),
    idempotencyKey: operationId,
    trace
  })
}

/** Gives a plain tool's executor answer its meaning (SPEC section 5, "Uncertain writes"). */
export function interpretAnswer (answer: ExecutorAnswer, readOnly: boolean): PlainOutcome {
  switch (answer.kind) {
    case 'unsent':
      return failed('executor_unavailable', 'The tool could not be reached; the call was not sent.', { cause: answer.code })
    case 'unknown':
      return unknownOutcome(answer.code, answer.status, readOnly)
    case 'answered': {
      const { status, body } = answer
      if (status >= 300 && status < 400) {
        return failed('executor_redirect', 'The tool answered with a redirect, which is not followed; the call was not performed.', { httpStatus: status })
      }
      if (status >= 400) {
        const content = isObject(body) && body.content !== undefined
          ? contentOf(body.content)
          : errorContent('executor_rejected', `The tool refused the call (HTTP ${status}).`)
        return { status: 'error', content, isError: true, details: answeredDetails(status, body) }
      }
      // A 2xx is definitive: an empty one (204) is a success with nothing to say.
      if (answer.bodyText === '') return { status: 'ok', content: '', isError: false, details: { httpStatus: status } }
      if (!isObject(body) || (body.isError !== undefined && typeof body.isError !== 'boolean') ||
          (body.details !== undefined && !isObject(body.details))) {
        return unknownOutcome('unreadable_answer', status, readOnly)
      }
      const isError = body.isError === true
      return { status: isError ? 'error' : 'ok', content: contentOf(body.content), isError, details: answeredDetails(status, body) }
    }
  }
}

/** Dispatches a plain (non-action) tool call and settles it for the runner (`trace` and `argumentsJson` as sendToExecutor takes them). */
export async function dispatchPlain (ctx: DispatchContext, call: PreparedCall, operationId: string,
  trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<DispatchOutcome<PlainOutcome>> {
  const outcome = interpretAnswer(await sendToExecutor(ctx, call, operationId, trace, argumentsJson), call.tool.readOnly)
  outcome.details.operationId = operationId
  return { value: outcome, uncertain: outcome.status === 'uncertain', closeBatch: false }
}

function unknownOutcome (cause: string, httpStatus: number | undefined, readOnly: boolean): PlainOutcome {
  const details: CallDetails = { cause }
  if (httpStatus !== undefined) details.httpStatus = httpStatus
  if (readOnly) {
    return { status: 'error', content: errorContent('executor_failed', 'The tool failed to answer; this read had no effect and may be retried.'), isError: true, details }
  }
  return { status: 'uncertain', content: errorContent('outcome_unknown', UNCERTAIN_MESSAGE), isError: true, details }
}

function failed (error: string, message: string, details: CallDetails): PlainOutcome {
  return { status: 'error', content: errorContent(error, message), isError: true, details }
}

/** The details of an answer: its HTTP status, and the executor's own `details` object when it sent one. */
function answeredDetails (httpStatus: number, body: unknown): CallDetails {
  const details: CallDetails = { httpStatus }
  if (isObject(body) && isObject(body.details)) details.executor = body.details
  return details
}

export function isObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
