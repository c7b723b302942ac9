import type { Logger } from 'pino'
import { type Clock, clockReader } from '../clock.js'
import { ComposedStore } from './compose.js'
import { RedisBatchAnswers } from './redis-batches.js'
import { RedisCancelBus } from './redis-cancel.js'
import { RedisConnection, type RedisTraffic, parseStoreUrl } from './redis-connection.js'
import { RedisReceiptJournal } from './redis-receipts.js'
import { RedisRunState } from './redis-runs.js'
import { RedisUncertainWrites } from './redis-uncertain.js'
import { RedisWriteAhead } from './redis-write-ahead.js'
import { RedisTenantKeys } from './redis-keys.js'

export { DEFAULT_PREFIX, type RedisTraffic, parseStoreUrl } from './redis-connection.js'

/** Bounds, clocks and connection settings of the Redis store. */
export interface RedisStoreOptions {
  /** `redis://[user:password@]host:port/db`, or `rediss://` for TLS; `?prefix=` sets the key prefix. */
  url: string
  /** Prefix of every key and of the cancel channel; several deployments can share one Redis. @default the URL's `prefix`, else 'toolgate:' */
  prefix?: string
  /** Idle runs expire this long after their last use. */
  runTtlMs: number
  /** Most runs held; `createRun` evicts one first, as the memory store does. */
  maxRuns: number
  /** Most runs one tenant holds; one more is refused (TenantRunsQuotaError). @default no bound */
  maxRunsPerTenant?: number
  /** Most runs of one tenant with a waiting batch; one more is refused (TenantWaitingQuotaError). @default no bound */
  maxWaitingPerTenant?: number
  /** Most unresolved uncertain writes one tenant's list keeps (GET /v1/uncertain); past it the oldest are dropped. @default MAX_TENANT_UNCERTAIN */
  maxUncertainPerTenant?: number
  /** Receipts outlive their run by at least this long. */
  receiptRetentionMs: number
  /** A command unanswered this long fails (503 to the client). @default 5000 */
  commandTimeoutMs?: number
  /** Compare-and-set attempts of one `updateRun` before it gives up (503). @default 100 */
  maxUpdateAttempts?: number
  /** Connection loss and recovery are logged here (never the URL). */
  logger?: Pick<Logger, 'warn' | 'info'>
  /** Reads the time of runs' use and expiry, and of receipts' retention (key TTLs are Redis's own). @default systemClock */
  clock?: Pick<Clock, 'now'>
}

const DEFAULT_MAX_UPDATE_ATTEMPTS = 100

/**
 * The shared store of several replicas: every contract's Redis part on one
 * connection and key prefix (their keys are listed in redis-scripts.ts).
 * The run state's update script writes batch answers and keeps receipts
 * alive in the same round trip, so the parts are meant to be used together.
 */
export class RedisStore extends ComposedStore {
  readonly #conn: RedisConnection
  readonly #cancel: RedisCancelBus

  constructor (opts: RedisStoreOptions) {
    const url = parseStoreUrl(opts.url)
    const prefix = opts.prefix ?? url.prefix
    for (const name of ['runTtlMs', 'maxRuns', 'maxRunsPerTenant', 'maxWaitingPerTenant', 'maxUncertainPerTenant', 'receiptRetentionMs', 'commandTimeoutMs', 'maxUpdateAttempts'] as const) {
      const v = opts[name]
      if (v !== undefined && (!Number.isSafeInteger(v) || v < (name === 'receiptRetentionMs' ? 0 : 1))) {
        throw new TypeError(`Expected \`${name}\` of the Redis store to be a positive integer, got ${String(v)}`)
      }
    }
    const bounds = {
      runTtlMs: opts.runTtlMs,
      maxRuns: opts.maxRuns,
      maxRunsPerTenant: opts.maxRunsPerTenant ?? 0,
      maxWaitingPerTenant: opts.maxWaitingPerTenant ?? 0,
      receiptRetentionMs: opts.receiptRetentionMs,
      maxUpdateAttempts: opts.maxUpdateAttempts ?? DEFAULT_MAX_UPDATE_ATTEMPTS,
      now: clockReader(opts.clock)
    }
    // Checks the prefix before it connects.
    const conn = new RedisConnection({ connection: url.connection, prefix, commandTimeoutMs: opts.commandTimeoutMs, logger: opts.logger })
    const cancel = new RedisCancelBus(conn)
    super({
      runs: new RedisRunState(conn, bounds),
      batches: new RedisBatchAnswers(conn),
      receipts: new RedisReceiptJournal(conn, bounds),
      uncertain: new RedisUncertainWrites(conn, bounds),
      writes: new RedisWriteAhead(conn, bounds),
      cancel,
      keys: new RedisTenantKeys(conn, { runTtlMs: opts.runTtlMs, maxUncertainPerTenant: opts.maxUncertainPerTenant }),
      backends: [{
        // Redis answers a PING, and the cancel subscription (once there is one) is connected.
        ready: async () => cancel.connected() && await conn.ready(),
        close: () => conn.close([cancel.close()])
      }]
    })
    this.#conn = conn
    this.#cancel = cancel
  }

  /** The key prefix in use (tests clean up by it). */
  get prefix (): string { return this.#conn.prefix }

  /** Round trips and commands so far (a copy): the bench and the round-trip test read it. */
  traffic (): RedisTraffic { return this.#conn.traffic() }

  /** Settles once the first subscription of `onCancel` reached Redis (or failed; it is retried on reconnection). */
  whenSubscribed (): Promise<void> { return this.#cancel.whenSubscribed() }
}
