import type { ExecutorAnswer as HttpAnswer } from './client.js'
import type { PreparedCall } from '../prepare/types.js'

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
  /** Told every answer as it comes, before it is given its meaning (telemetry reads why an exchange failed). */
  onAnswer?: (call: PreparedCall, answer: ExecutorAnswer) => void
}

/**
 * The executor port: the batch engine hands it a prepared call and gets the
 * exchange's answer, without knowing what kind of executor it spoke to.
 * Never rejects. `trace` holds the call's trace context headers;
 * `argumentsJson` is JSON.stringify of its arguments, when known already.
 */
export interface Executor {
  send (ctx: DispatchContext, call: PreparedCall, operationId: string,
    trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<ExecutorAnswer>
}

/** The executor that performs a call: the tool's own (an MCP server's), else the batch's HTTP one. */
export function executorOf (ctx: DispatchContext, call: PreparedCall): Executor {
  return call.tool.executor.via ?? ctx.http
}
