import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { UNSENT_CODES } from '../dispatch/client.js'
import type { ExecutorAnswer } from '../dispatch/executor.js'
import { ResponseTooLargeError } from './bounded-fetch.js'
import { OAuthError } from './oauth.js'

/** The SDK's own message when the transport closes under a pending request (Protocol._onclose). */
const CONNECTION_CLOSED = `MCP error ${ErrorCode.ConnectionClosed}: Connection closed`
const NOT_CONNECTED = 'Not connected'

/**
 * What a failed `tools/call` means for toolgate: an exchange the server
 * answered (a JSON-RPC error, an HTTP 4xx), one that never left (not
 * connected, connection refused), or one whose outcome is unknown (the
 * SDK's timeout, which sent notifications/cancelled; the transport closing;
 * an HTTP 5xx; an answer that is not a tool result).
 */
export function classifyCallError (err: unknown): ExecutorAnswer {
  // Cut by toolgate past TOOLGATE_MAX_EXECUTOR_RESPONSE_BYTES: the tool may have run.
  if (err instanceof ResponseTooLargeError) return { kind: 'unknown', code: 'response_too_large' }
  // No token: the request never left, or the server refused it (401) before processing it.
  if (err instanceof OAuthError) return { kind: 'unsent', code: 'oauth_failed' }
  if (err instanceof McpError) {
    // The SDK's timeout carries the timeout it waited for; a server's own error has no reason to.
    if (err.code === ErrorCode.RequestTimeout && (err.data as { timeout?: unknown } | undefined)?.timeout !== undefined) return { kind: 'unknown', code: 'timeout' }
    if (err.code === ErrorCode.ConnectionClosed && err.message === CONNECTION_CLOSED && err.data === undefined) return { kind: 'unknown', code: 'connection_closed' }
    return { kind: 'tool_refused', code: err.code, message: stripPrefix(err.message, err.code) }
  }
  if (err instanceof StreamableHTTPError) {
    const status = err.code ?? -1
    if (status >= 500) return { kind: 'unknown', code: 'executor_5xx', status }
    // A 3xx or 4xx: the server refused the request as a whole; the tool did not run.
    if (status >= 300 && status < 500) return { kind: 'answered', status, body: undefined, bodyText: '' }
    return { kind: 'unknown', code: 'unreadable_answer' }
  }
  if (err instanceof Error) {
    if (err.message === NOT_CONNECTED) return { kind: 'unsent', code: 'not_connected' }
    if (err.name === 'ZodError') return { kind: 'unknown', code: 'unreadable_answer' }
    const code = unsentCode(err)
    if (code !== null) return { kind: 'unsent', code }
    return { kind: 'unknown', code: 'connection_lost' }
  }
  return { kind: 'unknown', code: 'request_failed' }
}

/** A connect-level failure (fetch's TypeError wraps it in `cause`): nothing was sent. */
function unsentCode (err: unknown): string | null {
  const own = (err as { code?: unknown })?.code
  const cause = (err as { cause?: { code?: unknown } })?.cause?.code
  if (typeof own === 'string' && UNSENT_CODES.has(own)) return own
  if (typeof cause === 'string' && UNSENT_CODES.has(cause)) return cause
  return null
}

/**
 * A short description of why connecting or listing failed, for `lastError`
 * and the log: toolgate's own words and codes, never the server's text (an
 * executor body) or anything of the request (header values).
 */
export function describeFailure (err: unknown): string {
  if (err instanceof ResponseTooLargeError) return err.message
  if (err instanceof OAuthError) return `OAuth: ${err.message}`
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return 'timed out'
    if (err.code === ErrorCode.ConnectionClosed) return 'the connection closed'
    return `JSON-RPC error ${err.code}`
  }
  if (err instanceof StreamableHTTPError) return err.code !== undefined && err.code > 0 ? `HTTP ${err.code}` : 'an unreadable answer'
  const code = unsentCode(err) ?? (err as { code?: unknown })?.code ?? (err as { cause?: { code?: unknown } })?.cause?.code
  if (typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code)) return code
  if ((err as Error)?.name === 'ZodError') return 'an answer that is not valid MCP'
  return 'the request failed'
}

function stripPrefix (message: string, code: number): string {
  const prefix = `MCP error ${code}: `
  return message.startsWith(prefix) ? message.slice(prefix.length) : message
}
