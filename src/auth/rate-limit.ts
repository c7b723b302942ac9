import type { FastifyInstance, FastifyRequest } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import { ProblemError } from '../errors.js'

export interface RateLimitOptions {
  /** Requests per key per window. */
  max: number
  windowMs: number
}

/** Most keys whose counters are held at once (least recently used go first). */
export const RATE_LIMIT_KEYS_HELD = 10_000

/**
 * Per-key rate limiting (@fastify/rate-limit), counted by the caller's key
 * id, never by address: many agents may share one egress. Routes that need
 * no key (health, open metrics) are not counted. It runs as a route hook,
 * after the auth hook has resolved the principal, and before the body is read.
 */
export async function registerRateLimit (app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: opts.max,
    timeWindow: opts.windowMs,
    hook: 'onRequest',
    cache: RATE_LIMIT_KEYS_HELD,
    keyGenerator: (req: FastifyRequest) => `key:${req.principal?.keyId ?? '-'}`,
    allowList: (req: FastifyRequest) => req.principal === null,
    errorResponseBuilder: (_req, context) =>
      new ProblemError('rate_limited', `Too many requests for this API key; retry in ${context.after}.`)
  })
}
