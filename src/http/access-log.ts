import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { LineFields } from '../logger.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** What the request's log line says of the batch it ran, set by the batch route. */
    batchLog: LineFields | null
    /** Set once the request's line is written: a streamed batch may reach both writers. */
    lineWritten: boolean
    /** The trace id of the request's span when tracing is on (src/telemetry/http-span.ts). */
    traceId: string | null
  }
}

/** Routes polled by machines (probes, scrapes): their successful answers log at debug, not info. */
const POLLED_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics'])

/**
 * One log line per request, written once the answer is sent: method, route,
 * status and durationMs, the caller's tenant and key name (never the key),
 * bound to the request id. A batch request's line is `batch completed` and
 * carries the batch too (runId, batchId, turn, calls, outcome), so a batch
 * costs one line, not two.
 */
export function registerAccessLog (app: FastifyInstance): void {
  app.decorateRequest('batchLog', null)
  app.decorateRequest('lineWritten', false)
  app.decorateRequest('traceId', null)
  // A callback hook: it runs on every request and needs no promise.
  app.addHook('onResponse', (req, reply, done) => {
    logRequest(req, reply.statusCode, reply.elapsedTime)
    done()
  })
}

/**
 * Writes a request's line, once: the second call for the same request does
 * nothing. A streamed batch writes its own (its response may never finish when
 * the client went away), and fastify's onResponse then finds it written.
 */
export function logRequest (req: FastifyRequest, status: number, elapsedMs: number): void {
  if (req.lineWritten) return
  req.lineWritten = true
  // Noted by the route's first hook; read back only for a request that never reached it (no route, shed).
  const route = req.routeUrl ?? req.routeOptions.url
  req.server.services.telemetry.requests.answered(req.method, route, status, elapsedMs, req.batchLog)
  // Written by the root logger with the request id first, which reads exactly as a line of
  // the request's child logger would, without making that child (src/http/request-logger.ts).
  const line: Record<string, string | number | boolean> = { reqId: req.id, method: req.method }
  if (route !== undefined) line.route = route
  line.status = status
  line.durationMs = Math.round(elapsedMs * 100) / 100
  const principal = req.principal
  if (principal !== null) {
    line.tenant = principal.tenant
    if (principal.name !== undefined) line.keyName = principal.name
  }
  if (req.traceId !== null) line.trace_id = req.traceId
  if (req.batchLog !== null) Object.assign(line, req.batchLog)
  const level = status < 400 && route !== undefined && POLLED_ROUTES.has(route) ? 'debug' : 'info'
  req.server.log[level](line, req.batchLog === null ? 'request' : 'batch completed')
}
