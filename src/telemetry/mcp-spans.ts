/**
 * A SERVER span per JSON-RPC request to toolgate's own MCP endpoint (SPEC
 * sections 8 and 16), after OpenTelemetry's MCP semantic conventions: named
 * `{mcp.method.name} {target}` (the tool's name for `tools/call`), with
 * `mcp.method.name`, `mcp.session.id`, `jsonrpc.request.id`,
 * `mcp.protocol.version` and, for `tools/call`, `gen_ai.tool.name` and
 * `gen_ai.operation.name`. It is a child of the HTTP request's span that
 * carried the message, and the request's handler runs with it active: the
 * batch span of a `tools/call` (and its epoch and `execute_tool` spans)
 * are its children. Never arguments, nor anything derived from them.
 */
import { type Context, type Span, SpanKind, SpanStatusCode, type Tracer, context, trace } from '@opentelemetry/api'
import { ATTR, activeTracer } from './tracing.js'

/** Attribute names of the MCP conventions. */
export const MCP_ATTR = {
  method: 'mcp.method.name',
  sessionId: 'mcp.session.id',
  requestId: 'jsonrpc.request.id',
  protocolVersion: 'mcp.protocol.version',
  networkTransport: 'network.transport',
  networkProtocol: 'network.protocol.name'
} as const

/** Longest method or tool name put on a span: both are the client's text. */
const MAX_NAME = 128

/** What a span needs of one incoming request. */
export interface McpRequestInfo {
  method: string
  id: string | number
  /** The tool a `tools/call` names, as the client sent it. */
  tool?: string | undefined
  sessionId?: string | undefined
  protocolVersion?: string | undefined
}

/** How a request ended: its JSON-RPC error code, a tool result with `isError`, or success. */
export type McpRequestEnd = { error: number } | { toolError: true } | { ok: true }

/** The open spans of one MCP session's requests, by JSON-RPC id. */
export class McpRequestSpans {
  readonly #tracer: Tracer
  readonly #open = new Map<string, Span>()

  private constructor (tracer: Tracer) {
    this.#tracer = tracer
  }

  /** Spans for a session, or null when no tracer provider is set: then nothing is made at all. */
  static create (tracer: Tracer | null = activeTracer()): McpRequestSpans | null {
    return tracer === null ? null : new McpRequestSpans(tracer)
  }

  /** A request arrived: starts its span under the active context, and answers the context its handler runs in. */
  start (r: McpRequestInfo): Context {
    const method = r.method.slice(0, MAX_NAME)
    const tool = r.tool?.slice(0, MAX_NAME)
    const span = this.#tracer.startSpan(tool === undefined ? method : `${method} ${tool}`, {
      kind: SpanKind.SERVER,
      attributes: {
        [MCP_ATTR.method]: method,
        [MCP_ATTR.requestId]: String(r.id),
        [MCP_ATTR.networkTransport]: 'tcp',
        [MCP_ATTR.networkProtocol]: 'http',
        ...(r.sessionId === undefined ? {} : { [MCP_ATTR.sessionId]: r.sessionId }),
        ...(r.protocolVersion === undefined ? {} : { [MCP_ATTR.protocolVersion]: r.protocolVersion }),
        ...(tool === undefined ? {} : { [ATTR.toolName]: tool, [ATTR.operationName]: 'execute_tool' })
      }
    })
    // A client that reuses an id while its request is open: the older span ends here, unanswered.
    this.#open.get(String(r.id))?.end()
    this.#open.set(String(r.id), span)
    return trace.setSpan(context.active(), span)
  }

  /** The request was answered. */
  end (id: string | number, how: McpRequestEnd, sessionId?: string | undefined): void {
    const span = this.#take(id)
    if (span === undefined) return
    // The session's id is known once initialize made it.
    if (sessionId !== undefined) span.setAttribute(MCP_ATTR.sessionId, sessionId)
    if ('error' in how) {
      span.setAttribute(ATTR.errorType, String(how.error))
      span.setStatus({ code: SpanStatusCode.ERROR })
    } else if ('toolError' in how) {
      span.setAttribute(ATTR.errorType, 'tool_error')
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
    span.end()
  }

  /** The client cancelled the request (`notifications/cancelled`): MCP sends it no answer. */
  cancelled (id: string | number): void {
    const span = this.#take(id)
    if (span === undefined) return
    span.setAttribute(ATTR.errorType, 'cancelled')
    span.end()
  }

  /** The session ended: requests still open end unanswered. */
  closeAll (): void {
    for (const span of this.#open.values()) {
      span.setAttribute(ATTR.errorType, 'session_closed')
      span.end()
    }
    this.#open.clear()
  }

  #take (id: string | number): Span | undefined {
    const key = String(id)
    const span = this.#open.get(key)
    if (span !== undefined) this.#open.delete(key)
    return span
  }
}
