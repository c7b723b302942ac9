import type { FastifyInstance, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    /** What the request's log line says of the batch it ran, set by the batch route. */
    batchLog: Record<string, string | number | boolean> | null
  }
}

/**
 * One log line per request, written once the answer is sent: method, route,
 * status and time, bound to the request id. A batch request's line is
 * `batch completed` and carries the batch too (runId, batchId, turn, calls,
 * outcome, durationMs), so a batch costs one line, not two.
 */
export function registerAccessLog (app: FastifyInstance): void {
  app.decorateRequest('batchLog', null)
  // A callback hook: it runs on every request and needs no promise.
  app.addHook('onResponse', (req, reply, done) => {
    logRequest(req, reply.statusCode, reply.elapsedTime)
    done()
  })
}

/** Writes a request's line; `extra` adds fields (a streamed batch says so). */
export function logRequest (req: FastifyRequest, status: number, elapsedMs: number, extra?: Record<string, unknown>): void {
  // Written by the root logger with the request id first, which reads exactly as a line of
  // the request's child logger would, without making that child (src/http/request-logger.ts).
  const line = { reqId: req.id, method: req.method, route: req.routeOptions.url, status, ms: Math.round(elapsedMs * 100) / 100, ...req.batchLog, ...extra }
  req.server.log.info(line, req.batchLog === null ? 'request' : 'batch completed')
}
