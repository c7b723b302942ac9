/**
 * What an MCP client gets for one `tools/call` (SPEC section 16): the batch
 * answer of its one-call turn, as an MCP tool result. Pure.
 */
import type { ToolCallResult } from '../dispatch/executor.js'
import type { CallResult } from '../model/result.js'

/** The part of a batch's answer (JSON) a tool result is made of. */
export interface TurnAnswer {
  results: CallResult[]
  policyMessages: ReadonlyArray<{ type: string, content: string }>
  run: { state: string, terminationReason?: string }
}

/** An MCP `CallToolResult`, as toolgate fills it. */
export interface McpToolResult {
  [key: string]: unknown
  content: unknown[]
  structuredContent?: Record<string, unknown>
  isError: boolean
  _meta: Record<string, string>
}

/** The operation id a result names: a plain write's, or an action's receipt's. */
function operationIdOf (result: CallResult): string | undefined {
  const details = result.details as { operationId?: unknown, receipt?: { operationId?: unknown } }
  const id = details.operationId ?? details.receipt?.operationId
  return typeof id === 'string' ? id : undefined
}

/**
 * Whether an imported MCP tool's own result is what its caller gets: when
 * the call's result is that answer as it came (`ok`, or the server's own
 * `isError`), not toolgate's word on it (an action's receipt, an output
 * that failed its schema, an uncertain write).
 */
function passesThrough (result: CallResult, raw: ToolCallResult | undefined): raw is ToolCallResult {
  if (raw === undefined || (result.details as { receipt?: unknown }).receipt !== undefined) return false
  return result.status === 'ok' ? raw.isError !== true : result.status === 'error' && raw.isError === true
}

/**
 * The tool result of a one-call turn's answer: the call's content as one
 * text item, or, for an imported MCP tool's own answer (`raw`), its content
 * items and `structuredContent` unchanged; policy messages follow as more
 * text items.
 */
export function toolResultOf (answer: TurnAnswer, raw?: ToolCallResult): McpToolResult {
  const result = answer.results[0]
  if (result === undefined) throw new Error('a one-call turn answered no result')
  const meta: Record<string, string> = { 'toolgate/status': result.status, 'toolgate/callId': result.callId }
  if (result.details.reason !== undefined) meta['toolgate/reason'] = result.details.reason
  const operationId = operationIdOf(result)
  if (operationId !== undefined) meta['toolgate/operationId'] = operationId
  const policy = answer.policyMessages.map((p) => ({ type: 'text' as const, text: p.content }))
  if (passesThrough(result, raw)) {
    return {
      content: [...raw.content, ...policy],
      ...(raw.structuredContent === undefined ? {} : { structuredContent: raw.structuredContent }),
      isError: result.isError,
      _meta: meta
    }
  }
  return { content: [{ type: 'text', text: result.content }, ...policy], isError: result.isError, _meta: meta }
}

/** The answer to every call once the run is no longer active: an error the model can read, nothing ran. */
export function runEndedResult (callId: string, state: string, terminationReason: string | undefined): McpToolResult {
  const why = terminationReason === undefined || terminationReason === state ? '' : ` (${terminationReason})`
  const text = JSON.stringify({ error: 'run_not_active', state, ...(terminationReason === undefined ? {} : { terminationReason }), message: `This agent run has ${state === 'ended' ? 'ended' : `been ${state}`}${why}; no more tool calls run in it.` })
  return {
    content: [{ type: 'text', text }],
    isError: true,
    _meta: { 'toolgate/status': 'rejected', 'toolgate/callId': callId, 'toolgate/reason': 'run_not_active' }
  }
}
