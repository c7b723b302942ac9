/**
 * CLIENT spans (OpenTelemetry's HTTP client and MCP conventions) around the
 * requests toolgate makes for a call: to an HTTP executor, to an MCP server,
 * to the external authorizer. Each continues the trace context it is given
 * (the call's span, or the active span) and hands its own on to the request,
 * so the executor's spans hang under toolgate's request to it. Never an
 * argument, a body or a header value.
 */
import { type Attributes, type Context, type Span, SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api'
import type { Executor, ExecutorAnswer, ExecutorCall, SendOptions } from '../dispatch/executor.js'
import { activeTracer, extractContext, injectContext } from './tracing.js'

/** A span's name and its attributes known before the request. */
export interface ClientSpanShape { name: string, attributes: Attributes }

/**
 * Runs `send` inside a CLIENT span, child of `parent` (trace headers, or the
 * active context when undefined); `send` gets the headers to put on its
 * request. Without a tracer provider `send` gets `parent` unchanged.
 */
export async function withClientSpan<T> (
  parent: Readonly<Record<string, string>> | undefined, shape: () => ClientSpanShape,
  send: (headers: Readonly<Record<string, string>> | undefined) => Promise<T>, settle: (span: Span, answer: T) => void
): Promise<T> {
  const tracer = activeTracer()
  if (tracer === null) return await send(parent)
  const parentCtx: Context = parent === undefined ? context.active() : extractContext(parent)
  const { name, attributes } = shape()
  const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parentCtx)
  try {
    const answer = await send(injectContext(trace.setSpan(parentCtx, span)))
    settle(span, answer)
    return answer
  } catch (err) {
    failed(span, (err as { code?: unknown })?.code ?? (err as Error)?.name ?? 'error')
    throw err
  } finally {
    span.end()
  }
}

/** Marks a span failed with a short fixed `error.type`. */
export function failed (span: Span, type: unknown): void {
  const text = String(type).slice(0, 64)
  span.setAttribute('error.type', text)
  span.setStatus({ code: SpanStatusCode.ERROR, message: text })
}

/** What an executor's answer says on its span: the HTTP status, or why there was none. */
export function settleAnswer (span: Span, answer: ExecutorAnswer): void {
  switch (answer.kind) {
    case 'answered':
      span.setAttribute('http.response.status_code', answer.status)
      // A client span is an error from 400 up (OpenTelemetry's HTTP conventions); the call's own span says what it meant.
      if (answer.status >= 400) failed(span, answer.status)
      return
    case 'unsent':
      failed(span, answer.code)
      return
    case 'unknown':
      if (answer.status !== undefined) span.setAttribute('http.response.status_code', answer.status)
      failed(span, answer.code)
      return
    case 'tool_result':
      if (answer.result.isError === true) failed(span, 'tool_error')
      return
    case 'tool_refused':
      span.setAttribute('rpc.response.status_code', String(answer.code))
      failed(span, answer.code)
  }
}

/** The span of a POST to `url`: method, server address and port, and the URL without query or credentials. */
export function httpPostShape (url: string): ClientSpanShape {
  const u = new URL(url)
  const port = u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port)
  return {
    name: 'POST',
    attributes: { 'http.request.method': 'POST', 'server.address': u.hostname, 'server.port': port, 'url.full': `${u.origin}${u.pathname}` }
  }
}

/**
 * An executor whose requests are CLIENT spans under their call's span. The
 * shape of a tool's span is worked out once per tool definition.
 */
export class TracedExecutor implements Executor {
  readonly #inner: Executor
  readonly #shapes = new WeakMap<ExecutorCall['tool'], ClientSpanShape>()

  constructor (inner: Executor) {
    this.#inner = inner
  }

  send (opts: SendOptions): Promise<ExecutorAnswer> {
    const headers = opts.trace
    // No trace context: a call outside a batch (recovery's status checks); nothing to hang a span under.
    if (headers === undefined || activeTracer() === null) return this.#inner.send(opts)
    return withClientSpan(headers, () => this.#shape(opts.call.tool), (h) => this.#inner.send({ ...opts, trace: h }), settleAnswer)
  }

  #shape (tool: ExecutorCall['tool']): ClientSpanShape {
    let shape = this.#shapes.get(tool)
    if (shape === undefined) this.#shapes.set(tool, (shape = httpPostShape(tool.executor.url)))
    return shape
  }
}
