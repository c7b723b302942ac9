import type { FastifyInstance, FastifyRequest } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { ProblemError } from '../errors.js'
import { parseStoreUrl } from '../store/redis.js'

export interface RateLimitOptions {
  /** Requests per key per window. */
  max: number
  windowMs: number
  /**
   * `TOOLGATE_STORE`: with a redis:// URL the counters live in that Redis,
   * shared by every replica, under the store's key prefix followed by
   * `ratelimit:`. With 'memory' each process counts on its own.
   */
  store: string
  /** Where a lost or recovered Redis connection of the counters is said. */
  logger: Pick<Logger, 'warn' | 'info'>
}

/** Most keys whose counters are held at once (least recently used go first). */
export const RATE_LIMIT_KEYS_HELD = 10_000

/**
 * How long a counter's command may take: past it the request is let through
 * uncounted (the limit fails open while Redis is away; the store's own calls
 * answer 503 meanwhile).
 */
export const RATE_LIMIT_REDIS_TIMEOUT_MS = 1000

/**
 * Per-key rate limiting (@fastify/rate-limit), counted by the caller's key
 * id, never by address: many agents may share one egress. Routes that need
 * no key (health, open metrics) are not counted. It runs as a route hook,
 * after the auth hook has resolved the principal, and before the body is read.
 * With the Redis store the counters are shared: N replicas allow the limit once, not N times.
 */
export async function registerRateLimit (app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  const shared = opts.store === 'memory' ? null : sharedCounters(opts.store, opts.logger)
  if (shared !== null) app.addHook('onClose', async () => { await shared.redis.quit().catch(() => shared.redis.disconnect()) })
  await app.register(rateLimit, {
    global: true,
    max: opts.max,
    timeWindow: opts.windowMs,
    hook: 'onRequest',
    ...(shared === null ? { cache: RATE_LIMIT_KEYS_HELD } : { redis: shared.redis, nameSpace: shared.prefix, skipOnError: true }),
    keyGenerator: (req: FastifyRequest) => `key:${req.principal?.keyId ?? '-'}`,
    allowList: (req: FastifyRequest) => req.principal === null,
    errorResponseBuilder: (_req, context) =>
      new ProblemError('rate_limited', `Too many requests for this API key; retry in ${context.after}.`)
  })
}

/** A connection of its own to the store's Redis, and the key prefix of the counters. */
function sharedCounters (storeUrl: string, logger: Pick<Logger, 'warn' | 'info'>): { redis: Redis, prefix: string } {
  const { connection, prefix } = parseStoreUrl(storeUrl)
  const redis = new Redis(connection, {
    connectionName: 'toolgate-ratelimit',
    maxRetriesPerRequest: 1,
    commandTimeout: RATE_LIMIT_REDIS_TIMEOUT_MS,
    connectTimeout: 5000,
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
    enableAutoPipelining: true
  })
  // Said once per outage; never the URL (it may hold a password).
  let down = false
  redis.on('error', (err: Error) => {
    if (down) return
    down = true
    logger.warn({ problem: (err as { code?: string }).code ?? err.name }, 'rate-limit counters unreachable in Redis: the limit is not enforced until they are back')
  })
  redis.on('ready', () => {
    if (!down) return
    down = false
    logger.info('rate-limit counters reachable in Redis again')
  })
  return { redis, prefix: `${prefix}ratelimit:` }
}
