import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'

/** The header a request id comes in on and goes back out on. */
export const REQUEST_ID_HEADER = 'x-request-id'

/** Longest request id taken from a client; a longer one is replaced. */
export const MAX_REQUEST_ID_CHARS = 128

/**
 * What a client's request id may hold: visible ASCII that cannot break a log
 * line, a header or a trace attribute (no quotes, spaces or control characters).
 */
const VALID_REQUEST_ID = new RegExp(`^[A-Za-z0-9._:/+=@-]{1,${MAX_REQUEST_ID_CHARS}}$`)

/**
 * The request's id: the caller's `X-Request-Id` when it is a plausible id
 * (so a proxy's or client's id ties their lines to ours), else a new UUID,
 * unique across replicas unlike fastify's per-process counter.
 */
export function requestIdOf (req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER]
  return typeof given === 'string' && VALID_REQUEST_ID.test(given) ? given : randomUUID()
}

/** Every answer carries its request id, problems and streams included. */
export function registerRequestId (app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    reply.header(REQUEST_ID_HEADER, req.id)
    done()
  })
}
