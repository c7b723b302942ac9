import type { ExecutorAnswer } from '../dispatch/executor.js'
import { isObject } from '../model/json.js'

/** Why an exchange with an executor did not end in a success, as metrics and log lines name it. */
export const EXECUTOR_FAILURE_CAUSES = [
  'connect_refused', 'connect_timeout', 'dns', 'unreachable', 'tls', 'invalid_url',
  'timeout', 'connection_reset', 'aborted', 'response_too_large', 'unreadable_answer',
  'http_3xx', 'http_4xx', 'http_5xx', 'is_error', 'jsonrpc_error', 'other'
] as const

export type ExecutorFailureCause = typeof EXECUTOR_FAILURE_CAUSES[number]

/** The kinds of executor a call goes to: toolgate's HTTP executor protocol, or an MCP server. */
export const EXECUTOR_KINDS = ['http', 'mcp'] as const
export type ExecutorKind = typeof EXECUTOR_KINDS[number]

/** A failed exchange: its cause, the HTTP status when one came, and the client's own code (`ECONNREFUSED`, `executor_5xx`). */
export interface ExecutorFailure {
  cause: ExecutorFailureCause
  httpStatus?: number
  /** The error code the client reported, when it did (never free text). */
  code?: string
}

/** Client error codes by the cause they are counted under. */
const CAUSE_OF_CODE: Readonly<Record<string, ExecutorFailureCause>> = {
  ECONNREFUSED: 'connect_refused',
  UND_ERR_CONNECT_TIMEOUT: 'connect_timeout',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EADDRNOTAVAIL: 'unreachable',
  ERR_INVALID_URL: 'invalid_url',
  ERR_TLS_CERT_ALTNAME_INVALID: 'tls',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'tls',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'tls',
  SELF_SIGNED_CERT_IN_CHAIN: 'tls',
  CERT_HAS_EXPIRED: 'tls',
  timeout: 'timeout',
  ECONNRESET: 'connection_reset',
  UND_ERR_SOCKET: 'connection_reset',
  EPIPE: 'connection_reset',
  aborted: 'aborted',
  executor_5xx: 'http_5xx',
  response_too_large: 'response_too_large',
  unreadable_answer: 'unreadable_answer'
}

/**
 * What went wrong in one exchange, or null when the executor answered a
 * success. `action` says the call was of an action tool, whose executor
 * answers `{status: committed|rejected}` (a `rejected` is counted as
 * `is_error`, as an MCP `isError` result of an action is).
 */
export function executorFailureOf (answer: ExecutorAnswer, action: boolean): ExecutorFailure | null {
  switch (answer.kind) {
    case 'unsent':
      return { cause: CAUSE_OF_CODE[answer.code] ?? 'other', code: answer.code }
    case 'unknown': {
      const failure: ExecutorFailure = { cause: CAUSE_OF_CODE[answer.code] ?? 'other', code: answer.code }
      if (answer.status !== undefined) failure.httpStatus = answer.status
      return failure
    }
    case 'tool_refused':
      return { cause: 'jsonrpc_error' }
    case 'tool_result':
      return answer.result.isError === true ? { cause: 'is_error' } : null
    case 'answered': {
      const { status, body } = answer
      if (status >= 300 && status < 400) return { cause: 'http_3xx', httpStatus: status }
      if (status >= 400) return { cause: 'http_4xx', httpStatus: status }
      const readable = action
        ? isObject(body) && (body.status === 'committed' || body.status === 'rejected')
        : answer.bodyText === '' || (isObject(body) && (body.isError === undefined || typeof body.isError === 'boolean'))
      if (!readable) return { cause: 'unreadable_answer', httpStatus: status }
      const refused = action ? (body as Record<string, unknown>).status === 'rejected' : isObject(body) && body.isError === true
      return refused ? { cause: 'is_error', httpStatus: status } : null
    }
  }
}

