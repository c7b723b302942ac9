/**
 * The one catalogue of errors a client can be answered with. Codes are part of
 * the contract (SPEC section 9): never rename or reuse one.
 */
export const ERRORS = {
  invalid_request: { status: 400, title: 'The request is not valid' },
  invalid_tool: { status: 400, title: 'The tool definition is not valid' },
  duplicate_call_id: { status: 400, title: 'Two calls of the batch share an id' },
  invalid_mcp_server: { status: 400, title: 'The MCP server definition is not valid' },
  unauthorized: { status: 401, title: 'A valid API key is required' },
  forbidden: { status: 403, title: 'The API key lacks the role this route needs' },
  run_not_found: { status: 404, title: 'No such run (or receipt of a run) for this tenant' },
  tool_not_found: { status: 404, title: 'No such tool' },
  batch_not_found: { status: 404, title: 'No such batch of this run' },
  mcp_server_not_found: { status: 404, title: 'No such MCP server' },
  not_found: { status: 404, title: 'No such route' },
  method_not_allowed: { status: 405, title: 'The route does not take this method' },
  operation_not_found: { status: 404, title: 'No such operation for this tenant' },
  run_exists: { status: 409, title: 'A run with this id exists already' },
  run_busy: { status: 409, title: 'A batch of this run is in flight' },
  run_not_active: { status: 409, title: 'The run is not active' },
  operation_not_uncertain: { status: 409, title: 'The operation is not an unresolved uncertain write' },
  no_status_url: { status: 409, title: "The operation's tool has no executor.statusUrl to ask" },
  approval_not_pending: { status: 409, title: 'The call is not waiting for a decision' },
  payload_too_large: { status: 413, title: 'The request body is too large' },
  unsupported_media_type: { status: 415, title: 'The request body must be JSON' },
  batch_id_reused: { status: 422, title: 'The batch id was used for other calls' },
  rate_limited: { status: 429, title: 'Too many requests' },
  quota_exceeded: { status: 429, title: 'A quota of this tenant is used up' },
  internal_error: { status: 500, title: 'Internal error' },
  overloaded: { status: 503, title: 'The service is overloaded or shutting down' }
} as const satisfies Record<string, { status: number, title: string }>

export type ErrorCode = keyof typeof ERRORS

/**
 * The codes a call's result gives the model, beside the HTTP codes above:
 * the `error` of its content (an action receipt's `result.error`), and a
 * rejection's `details.reason`. As stable as the HTTP codes: never rename
 * or reuse one. docs/errors.md, "Codes the model reads", says when each is
 * given.
 */
export const CALL_ERRORS = {
  unknown_tool: 'No tool of that name or alias',
  tool_quarantined: "An MCP tool changed (or is new) since its server's tools were pinned; an admin has not approved it",
  tool_not_allowed: "The run's tool list leaves the tool out",
  invalid_arguments: "The arguments do not parse, are too large or too deep, or do not match the tool's schema",
  conflict_key_unresolved: "A pointer of the tool's conflict-key template reaches nothing in the arguments",
  policy_denied: 'The host policy or the authorization service refused the call',
  unauthorized: 'The key lacks a scope the tool requires, or the authorization service refused',
  incomplete_response: "The provider marked the model's response as cut short or filtered",
  unsupported_call_type: 'A provider call of a kind toolgate does not run',
  executor_unavailable: 'The tool could not be reached; the call was not sent',
  executor_rejected: 'The tool refused the call',
  executor_redirect: 'The tool answered with a redirect, which is not followed',
  executor_failed: 'A read got no readable answer; it had no effect',
  outcome_unknown: 'A write may have reached the tool; no definitive answer came back',
  store_unavailable: "The store could not be reached for an action's receipt, a write's write-ahead record or a tenant-scoped key; the call was not sent",
  conflict_key_busy: 'Not run: another call held its tenant-scoped conflict key for the whole wait',
  projection_failed: "An action's receipt projection failed",
  internal_error: 'The call failed inside toolgate',
  terminated: 'Not run: the run ended',
  cancelled: 'Not run: the batch was cancelled or closed first',
  blocked: 'Not run: an earlier write of the batch has an unknown outcome',
  unresolved_uncertain_write: 'Not run: the same write, sent before, has an unknown outcome',
  denied: 'Not run: a person declined the call, or no one decided in time'
} as const satisfies Record<string, string>

export type CallErrorCode = keyof typeof CALL_ERRORS

/** An error answered to the client as an RFC 9457 problem with a stable `code`. */
export class ProblemError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly extra: Record<string, unknown> | undefined

  constructor (code: ErrorCode, detail?: string, extra?: Record<string, unknown>) {
    super(detail ?? ERRORS[code].title)
    this.name = 'ProblemError'
    this.code = code
    this.status = ERRORS[code].status
    this.extra = extra
  }
}

/** The JSON body of a problem answer. */
export interface Problem {
  type: string
  title: string
  status: number
  code: ErrorCode
  detail?: string
  instance?: string
  [extra: string]: unknown
}

export function problemBody (code: ErrorCode, detail?: string, extra?: Record<string, unknown>, instance?: string): Problem {
  const { status, title } = ERRORS[code]
  const body: Problem = { type: `https://toolgate.dev/problems/${code}`, title, status, code }
  if (detail !== undefined && detail !== title) body.detail = detail
  if (instance !== undefined) body.instance = instance
  // Extra members never overwrite the standard ones.
  if (extra !== undefined) for (const [k, v] of Object.entries(extra)) if (!(k in body)) body[k] = v
  return body
}
