import type { FastifyInstance, FastifyRequest } from 'fastify'
import { jsonNumber, jsonString } from '../json-text.js'
import { type LineFields, fieldsText, logFields } from '../logger.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** What the request's log line says of the batch it ran, set by the batch route. */
    batchLog: LineFields | null
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
export function logRequest (req: FastifyRequest, status: number, elapsedMs: number, extra?: LineFields): void {
  // Written by the root logger with the request id first, which reads exactly as a line of
  // the request's child logger would, without making that child (src/http/request-logger.ts).
  // The fields are written as JSON text here, where their shape is known (src/logger.ts, logFields).
  // Noted by the route's first hook; read back only for a request that never reached it (no route, shed).
  const route = req.routeUrl ?? req.routeOptions.url
  let fields = `,"reqId":${jsonString(req.id)},"method":${jsonString(req.method)}` +
    (route === undefined ? '' : `,"route":${jsonString(route)}`) +
    `,"status":${jsonNumber(status)},"ms":${jsonNumber(Math.round(elapsedMs * 100) / 100)}`
  if (req.batchLog !== null) fields += fieldsText(req.batchLog)
  if (extra !== undefined) fields += fieldsText(extra)
  logFields(req.server.log, 'info', fields, req.batchLog === null ? 'request' : 'batch completed')
}
