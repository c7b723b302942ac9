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

/** What every call's dispatch in a batch needs besides the call: made once per batch. */
export interface DispatchContext {
  runId: string
  batchId: string
  /** The batch's executorBodyPrefix (the HTTP executor protocol's body starts with it). */
  bodyPrefix: string
  /** The executor of tools that name none of their own: toolgate's HTTP executor protocol. */
  http: Executor
  /** Told each progress report of a call's executor (an MCP server's), numbers only: the batch's `call.progress` event. */
  onProgress?: (call: ExecutorCall, update: { progress: number, total?: number | undefined }) => void
}

/** What an executor reads of a prepared call (src/model/call.ts): a `PreparedCall` is one. */
export interface ExecutorCall {
  readonly id: string
  readonly arguments: Record<string, unknown>
  readonly tool: {
    readonly name: string
    /** `maxTimeoutMs`: the longest the call may take in all while progress resets `timeoutMs` (SPEC §18). */
    readonly executor: { readonly url: string, readonly timeoutMs: number, readonly maxTimeoutMs?: number, readonly via?: Executor }
  }
}

/**
 * The executor port: the batch engine hands it a prepared call and gets the
 * exchange's answer, without knowing what kind of executor it spoke to.
 * Never rejects. `trace` holds the call's trace context headers;
 * `argumentsJson` is JSON.stringify of its arguments, when known already.
 */
export interface Executor {
  send (ctx: DispatchContext, call: ExecutorCall, operationId: string,
    trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<ExecutorAnswer>
}

/** The executor that performs a call: the tool's own (an MCP server's), else the batch's HTTP one. */
export function executorOf (ctx: DispatchContext, call: ExecutorCall): Executor {
  return call.tool.executor.via ?? ctx.http
}
