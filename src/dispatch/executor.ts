/**
 * The executor port. It imports nothing, so a tool can name its executor
 * (src/model/tool.ts) without preparation's types reaching the executor
 * kinds behind it: the port holds the part of a prepared call an executor reads.
 */

/** What an exchange under toolgate's HTTP executor protocol came to (src/dispatch/client.ts). */
export type HttpAnswer =
  /** A definitive HTTP answer (2xx, 3xx or 4xx). `body` is parsed JSON, or undefined when it was not JSON. */
  | { kind: 'answered', status: number, body: unknown, bodyText: string }
  /** A definitive failure before the request was sent: the executor never saw it. */
  | { kind: 'unsent', code: string }
  /** The request may have reached the executor and no definitive answer came. */
  | { kind: 'unknown', code: string, status?: number }

/**
 * The result of an MCP `tools/call` (the fields toolgate reads): a definitive
 * answer, whatever `isError` says.
 */
export interface ToolCallResult {
  content: unknown[]
  structuredContent?: Record<string, unknown> | undefined
  isError?: boolean | undefined
}

/**
 * How one exchange with an executor went, before any tool-level meaning is
 * given to it. Every executor kind answers one of three classes:
 * - answered (definitive): `answered` (the HTTP executor protocol's answer),
 *   `tool_result` (an MCP result) or `tool_refused` (an MCP JSON-RPC error);
 * - `unsent`: a definitive failure before the request was sent;
 * - `unknown`: the request may have reached the executor, no answer came.
 * Their meaning (ok, error, uncertain, a receipt's status) is given in one
 * place, src/batch/interpret.ts.
 */
export type ExecutorAnswer =
  | HttpAnswer
  | { kind: 'tool_result', result: ToolCallResult }
  | { kind: 'tool_refused', code: number, message: string }

/** What an executor reads of a prepared call (src/model/call.ts): a `PreparedCall` is one. */
export interface ExecutorCall {
  readonly id: string
  readonly arguments: Record<string, unknown>
  /** The fencing token of the call's tenant-scoped conflict key (SPEC section 17): `Toolgate-Fencing-Token`. */
  readonly fencingToken?: string
  readonly tool: {
    readonly name: string
    /** `maxTimeoutMs`: the longest the call may take in all while progress resets `timeoutMs` (SPEC §18). */
    readonly executor: { readonly url: string, readonly timeoutMs: number, readonly maxTimeoutMs?: number, readonly via?: Executor }
  }
}

/**
 * What an executor is handed for one call: one options object, as undici's
 * `dispatch(opts, handler)` takes, with nothing of one executor kind's
 * transport in it (each kind makes its own request of these).
 */
export interface SendOptions {
  /** The run and batch the call is part of (a single call arriving alone is a batch of its own). */
  readonly runId: string
  readonly batchId: string
  /** The run's tenant, when the call is part of one (recovery's status checks are not). */
  readonly tenant?: string | undefined
  readonly call: ExecutorCall
  /** The call's operation id: the executor's idempotency key. */
  readonly operationId: string
  /** The call's trace context headers; undefined outside a batch (recovery's status checks). */
  readonly trace?: Readonly<Record<string, string>> | undefined
  /** JSON.stringify of the call's arguments, when known already. */
  readonly argumentsJson?: string | undefined
  /** Told each progress report of the call's executor (an MCP server's), numbers only. */
  readonly onProgress?: ((update: { progress: number, total?: number | undefined }) => void) | undefined
}

/**
 * The executor port: the batch engine hands it a call and gets the
 * exchange's answer, without knowing what kind of executor it spoke to.
 * Never rejects.
 */
export interface Executor {
  send (opts: SendOptions): Promise<ExecutorAnswer>
}
