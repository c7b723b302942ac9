import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import { type Attributes, type Span, SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api'
import { activeTracer, extractContext } from './tracing.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's SERVER span while tracing is on, until it ends. */
    serverSpan: Span | null
  }
}

/** Routes polled by machines every few seconds: a span each would drown the traces worth reading. */
export const UNTRACED_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics'])

/** Longest url.path put on a span (Node accepts request lines of 16 KiB). */
const MAX_PATH = 2048

/**
 * A SERVER span per HTTP request (OpenTelemetry's HTTP server conventions),
 * continuing the caller's `traceparent`; the batch's span is its child. Its
 * route handler runs with the span active, so what the handler awaits (the
 * batch, log lines) finds it. The request's trace id goes on the access
 * log's line (request.traceId). buildApp registers it only when a tracer
 * provider is set as the app is built (src/server.ts starts tracing first), so
 * an untraced service pays for none of its hooks. Registered before the auth
 * and rate-limit hooks: a 401 or 429 is traced too.
 */
export function registerServerSpans (app: FastifyInstance): void {
  app.decorateRequest('serverSpan', null)
  app.addHook('onRequest', (req, reply, done) => {
    const tracer = activeTracer()
    const route = req.routeOptions.url
    if (tracer === null || (route !== undefined && UNTRACED_ROUTES.has(route))) return done()
    const attributes: Attributes = {
      'http.request.method': req.method,
      'url.path': pathOf(req.url),
      'url.scheme': req.protocol,
      'network.protocol.version': req.raw.httpVersion,
      'client.address': req.ip
    }
    if (route !== undefined) attributes['http.route'] = route
    const span = tracer.startSpan(route === undefined ? req.method : `${req.method} ${route}`, { kind: SpanKind.SERVER, attributes }, extractContext(req.headers))
    req.serverSpan = span
    req.traceId = span.spanContext().traceId
    // A hijacked (streamed) answer never reaches onResponse, nor does one whose client left.
    reply.raw.once('close', () => { endServerSpan(req, reply) })
    done()
  })
  app.addHook('onResponse', (req, reply, done) => {
    endServerSpan(req, reply)
    done()
  })
  app.addHook('onRoute', (route) => {
    const handler = route.handler
    route.handler = function (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) {
      const span = req.serverSpan
      if (span === null) return handler.call(this, req, reply)
      return context.with(trace.setSpan(context.active(), span), handler, this, req, reply)
    } as RouteHandlerMethod
  })
}

function endServerSpan (req: FastifyRequest, reply: FastifyReply): void {
  const span = req.serverSpan
  if (span === null) return
  req.serverSpan = null
  const raw = reply.raw
  if (raw.headersSent) {
    span.setAttribute('http.response.status_code', raw.statusCode)
    // A server span is an error for 5xx only: a 4xx is the caller's (OpenTelemetry's HTTP conventions).
    if (raw.statusCode >= 500) {
      span.setAttribute('error.type', String(raw.statusCode))
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
  }
  if (req.principal != null) span.setAttribute('toolgate.tenant', req.principal.tenant)
  span.end()
}

function pathOf (url: string): string {
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  return path.length > MAX_PATH ? path.slice(0, MAX_PATH) : path
}
