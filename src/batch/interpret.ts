import type { ExecutorAnswer, ToolCallResult } from '../dispatch/executor.js'
import type { CallErrorCode } from '../errors.js'
import type { ReceiptStatus } from '../model/receipt.js'
import type { CallDetails } from '../model/result.js'
import { UNCERTAIN_MESSAGE, contentOf, errorContent } from '../model/content.js'
import { isObject } from '../model/json.js'

/**
 * The one place where an executor's answer, of any kind, gets its meaning:
 * a plain tool's status and content (SPEC section 5, "Uncertain writes", and
 * section 12), or an action tool's receipt (sections 7 and 12).
 */

/** What the executor said, given its tool-level meaning. */
export interface PlainOutcome {
  status: 'ok' | 'error' | 'uncertain'
  content: string
  isError: boolean
  details: CallDetails
}

/** Longest JSON-RPC error message passed on to the model. */
const MAX_REFUSAL_MESSAGE = 500

/** Gives a plain tool's executor answer its meaning. */
export function interpretAnswer (answer: ExecutorAnswer, readOnly: boolean): PlainOutcome {
  switch (answer.kind) {
    case 'unsent':
      return failed('executor_unavailable', 'The tool could not be reached; the call was not sent.', { reason: 'executor_unavailable', cause: answer.code })
    case 'unknown':
      return unknownOutcome(answer.code, answer.status, readOnly)
    case 'tool_result': {
      const isError = answer.result.isError === true
      return { status: isError ? 'error' : 'ok', content: toolResultContent(answer.result), isError, details: {} }
    }
    case 'tool_refused':
      return failed('executor_rejected', refusalMessage(answer.code, answer.message), { cause: 'jsonrpc_error', jsonRpcCode: answer.code })
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

/**
 * What the model reads of an MCP result: its structuredContent serialized;
 * else the text of its content items joined by newlines when all are text;
 * else the content array serialized.
 */
function toolResultContent (result: ToolCallResult): string {
  if (result.structuredContent !== undefined) return JSON.stringify(result.structuredContent)
  const items = result.content
  let allText = true
  for (const item of items) {
    if (!isObject(item) || item.type !== 'text' || typeof item.text !== 'string') { allText = false; break }
  }
  if (!allText) return JSON.stringify(items)
  return items.map((item) => (item as { text: string }).text).join('\n')
}

function refusalMessage (code: number, message: string): string {
  const text = message.length > MAX_REFUSAL_MESSAGE ? `${message.slice(0, MAX_REFUSAL_MESSAGE)}…` : message
  return `The tool refused the call (JSON-RPC error ${code}): ${text}`
}

function unknownOutcome (cause: string, httpStatus: number | undefined, readOnly: boolean): PlainOutcome {
  const details: CallDetails = { cause }
  if (httpStatus !== undefined) details.httpStatus = httpStatus
  // An MCP result that does not match its tool's outputSchema (SPEC §18) says so as its reason too.
  if (cause === 'invalid_output') details.reason = 'invalid_output'
  if (readOnly) {
    return { status: 'error', content: errorContent('executor_failed', 'The tool failed to answer; this read had no effect and may be retried.'), isError: true, details }
  }
  return { status: 'uncertain', content: errorContent('outcome_unknown', UNCERTAIN_MESSAGE), isError: true, details }
}

function failed (error: CallErrorCode, message: string, details: CallDetails): PlainOutcome {
  return { status: 'error', content: errorContent(error, message), isError: true, details }
}

/** The details of an answer: its HTTP status, and the executor's own `details` object when it sent one. */
function answeredDetails (httpStatus: number, body: unknown): CallDetails {
  const details: CallDetails = { httpStatus }
  if (isObject(body) && isObject(body.details)) details.executor = body.details
  return details
}


/** An action dispatch's answer, as its receipt records it; `end` is the timeline event that closes the dispatch. */
export interface ActionAnswer { status: ReceiptStatus, result: Record<string, unknown> | null, stateRevision: string | number | null, end: string }

/**
 * An action executor answers `{status: committed|rejected, result, stateRevision?}`
 * over HTTP; an MCP server's result is `committed` (or `rejected` when it is
 * `isError`) with its structuredContent (else its content) as the result.
 */
export function interpretActionAnswer (answer: ExecutorAnswer): ActionAnswer {
  switch (answer.kind) {
    case 'unsent':
      return { status: 'failed', result: { error: 'executor_unavailable', cause: answer.code }, stateRevision: null, end: 'failed' }
    case 'unknown':
      return { status: 'uncertain', result: { error: 'outcome_unknown', cause: answer.code }, stateRevision: null, end: answer.code === 'timeout' ? 'timed_out' : 'failed' }
    case 'tool_result': {
      const { result } = answer
      const value = result.structuredContent !== undefined ? result.structuredContent : { content: result.content }
      return { status: result.isError === true ? 'rejected' : 'committed', result: value, stateRevision: null, end: 'responded' }
    }
    case 'tool_refused':
      return { status: 'rejected', result: { error: 'executor_rejected', jsonRpcCode: answer.code, message: refusalMessage(answer.code, answer.message) }, stateRevision: null, end: 'responded' }
    case 'answered': {
      const { status: http, body } = answer
      if (http >= 300 && http < 400) return { status: 'failed', result: { error: 'executor_redirect', httpStatus: http }, stateRevision: null, end: 'responded' }
      if (http >= 400) {
        const result = isObject(body) && isObject(body.result) ? body.result : { error: 'executor_rejected', httpStatus: http }
        return { status: 'rejected', result, stateRevision: revisionOf(body), end: 'responded' }
      }
      if (!isObject(body) || (body.status !== 'committed' && body.status !== 'rejected') ||
          (body.result !== undefined && !isObject(body.result)) ||
          (body.stateRevision !== undefined && body.stateRevision !== null && typeof body.stateRevision !== 'string' && typeof body.stateRevision !== 'number')) {
        return { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'unreadable_answer' }, stateRevision: null, end: 'responded' }
      }
      return { status: body.status, result: (body.result as Record<string, unknown> | undefined) ?? {}, stateRevision: revisionOf(body), end: 'responded' }
    }
  }
}

/** An action call's status from its receipt's: committed is `ok`, uncertain stays `uncertain`, rejected and failed are `error`s. */
export function actionCallStatus (status: ReceiptStatus): PlainOutcome['status'] {
  return status === 'committed' ? 'ok' : status === 'uncertain' ? 'uncertain' : 'error'
}

function revisionOf (body: unknown): string | number | null {
  if (!isObject(body)) return null
  const r = body.stateRevision
  return typeof r === 'string' || (typeof r === 'number' && Number.isFinite(r)) ? r : null
}
