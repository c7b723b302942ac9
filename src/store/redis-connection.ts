import { Redis, type RedisOptions } from 'ioredis'
import type { Logger } from 'pino'
import type { Script } from './redis-scripts.js'
import { StoreUnavailableError } from './records.js'

/** The key prefix when the URL names none. */
export const DEFAULT_PREFIX = 'toolgate:'
const DEFAULT_COMMAND_TIMEOUT_MS = 5000
/** How many keys one round trip of a listing reads. */
export const LIST_CHUNK = 500

/**
 * What this store has asked of Redis so far: round trips (requests it waited
 * on; commands sent together in one MULTI or one pipelined batch count once)
 * and commands (a script counts once, however many keys it touches).
 */
export interface RedisTraffic { roundTrips: number, commands: number }

/** How the store's parts reach Redis. */
export interface RedisConnectionOptions {
  /** A `redis://` or `rediss://` URL without toolgate's `prefix` parameter. */
  connection: string
  /** Prefix of every key and of the cancel channel. */
  prefix: string
  /** A command unanswered this long fails (503 to the client). @default 5000 */
  commandTimeoutMs?: number
  /** Connection loss and recovery are logged here (never the URL). */
  logger?: Pick<Logger, 'warn' | 'info'> | undefined
}

/**
 * The one Redis client the parts of a Redis store share, with their key
 * prefix: every command goes through `call` or `eval`, which count the
 * traffic and turn every failure into a StoreUnavailableError.
 */
export class RedisConnection {
  /** The client every part sends its commands on (through `call` and `eval`). */
  readonly redis: Redis
  /** Prefix of every key and of the cancel channel. */
  readonly prefix: string
  /** Where connection loss and recovery are logged (never the URL). */
  readonly logger: Pick<Logger, 'warn' | 'info'> | undefined
  readonly #traffic: RedisTraffic = { roundTrips: 0, commands: 0 }
  readonly #connectTimeoutMs: number
  /** Settles once the client first reaches Redis. */
  readonly #firstReady: Promise<void>
  #everReady = false
  #down = false
  #closed = false
  /** True while the socket is corked for the commands of this turn of the event loop (see #gather). */
  #gathering = false

  constructor (opts: RedisConnectionOptions) {
    if (opts.prefix === '') throw new TypeError('Expected `prefix` of the Redis store to be a non-empty string, got ""')
    this.prefix = opts.prefix
    this.logger = opts.logger
    const timeout = opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
    this.#connectTimeoutMs = timeout
    this.redis = new Redis(opts.connection, {
      connectionName: 'toolgate',
      // A command the store was told failed is never sent later: none is
      // queued while Redis is away (the first connection is waited for in
      // `call` instead), and none unanswered when the connection dropped is
      // sent again on the next one. A write-ahead record given up on and
      // then written after all would answer a call that was never sent
      // `uncertain`. An unanswered command fails after the command timeout.
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 1,
      commandTimeout: timeout,
      connectTimeout: timeout,
      retryStrategy: (times: number) => Math.min(times * 100, 1000),
      // Commands are gathered per turn of the event loop by `call` (one
      // socket write), not by ioredis' auto-pipelining: that keeps one
      // pipeline in flight at a time, so a command waited for the replies
      // to the one before, and its pipelines left three to four times the
      // young objects alive at each collection (docs/performance.md, "The
      // Redis tail, suspect by suspect").
      enableAutoPipelining: false
    } satisfies RedisOptions)
    this.#firstReady = new Promise<void>((resolve) => {
      this.redis.once('ready', () => {
        this.#everReady = true
        resolve()
      })
    })
    this.watch(this.redis, 'commands')
  }

  /** True once close() was called. */
  get closed (): boolean { return this.#closed }

  /** Round trips and commands so far (a copy). */
  traffic (): RedisTraffic { return { ...this.#traffic } }

  /** A key of this store: `<prefix><kind>` or `<prefix><kind>:<id>`. */
  key (kind: string, id?: string): string {
    return id === undefined ? this.prefix + kind : `${this.prefix}${kind}:${id}`
  }

  /** The write-ahead records of one run incarnation (src/store/redis-write-ahead-scripts.ts): neither a tenant nor a run id holds a `/`. */
  writeAheadKey (run: { tenant: string, runId: string, createdAt: number }): string {
    return this.key('wal', `${run.tenant}/${run.runId}/${run.createdAt}`)
  }

  /** The run indexes, and with a tenant that tenant's runs. */
  indexKeys (tenant?: string): string[] {
    const keys = ['runs', 'active', 'ended', 'leased'].map((name) => this.key('idx', name))
    if (tenant !== undefined) keys.push(this.key('tenant', tenant))
    return keys
  }

  /** Runs a script by its SHA, loading it on NOSCRIPT (one round trip more, counted). */
  async eval (script: Script, keys: string[], args: Array<string | number>): Promise<unknown> {
    return this.call(async () => {
      try {
        return await this.redis.evalsha(script.sha, keys.length, ...keys, ...args)
      } catch (err) {
        if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err
        this.#traffic.roundTrips++
        this.#traffic.commands++
        return this.redis.eval(script.lua, keys.length, ...keys, ...args)
      }
    })
  }

  /** Every Redis failure becomes a StoreUnavailableError, with Redis's message only (never the command's arguments). */
  async call<T> (op: () => Promise<T>, commands = 1): Promise<T> {
    if (!this.#everReady && !await this.#firstConnection()) throw new StoreUnavailableError('The Redis store is unreachable')
    // Known lost: answer at once (nothing is queued until the next reconnection attempt).
    if (lost(this.redis)) throw new StoreUnavailableError('The Redis store is unreachable')
    this.#traffic.roundTrips++
    this.#traffic.commands += commands
    this.#gather()
    try {
      return await op()
    } catch (err) {
      throw new StoreUnavailableError(`The Redis store failed: ${(err as Error).message}`)
    }
  }

  /**
   * Corks the socket until the event loop has run the callbacks of the I/O
   * it is handling now (`setImmediate`), so the commands they send (batches
   * in flight together, a listing's chunk) leave in one write instead of
   * one each. Nothing waits for a reply: the write goes out once this turn
   * of the loop is done, whatever was sent before it.
   */
  #gather (): void {
    if (this.#gathering || this.redis.status !== 'ready') return
    const stream = this.redis.stream
    this.#gathering = true
    stream.cork()
    setImmediate(() => {
      this.#gathering = false
      stream.uncork()
    })
  }

  /** Redis answers a PING. */
  async ready (): Promise<boolean> {
    // While the first connection is being made the PING waits for it; once lost, the answer is no at once.
    if (!this.#everReady && !await this.#firstConnection()) return false
    if (lost(this.redis)) return false
    try {
      return (await this.redis.ping()) === 'PONG'
    } catch {
      return false
    }
  }

  /** Waits for the first connection, at most the connect timeout: true once it is made. */
  async #firstConnection (): Promise<boolean> {
    if (this.redis.status === 'end' || this.#closed) return false
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<void>((resolve) => { timer = setTimeout(resolve, this.#connectTimeoutMs) })
    try {
      await Promise.race([this.#firstReady, late])
    } finally {
      clearTimeout(timer)
    }
    return this.#everReady
  }

  /** Logs a client's loss of Redis once, and its recovery. */
  watch (client: Redis, role: string): void {
    client.on('error', (err: Error) => {
      if (this.#down || this.#closed) return
      this.#down = true
      this.logger?.warn({ role, err: { message: err.message } }, 'Redis store unreachable: batches are refused (503) until it is back')
    })
    client.on('ready', () => {
      if (!this.#down) return
      this.#down = false
      this.logger?.info({ role }, 'Redis store reachable again')
    })
  }

  /** Closes the shared client and any other given (the cancel subscription). */
  async close (others: ReadonlyArray<Redis | null> = []): Promise<void> {
    this.#closed = true
    await Promise.all([this.redis, ...others].map(async (client) => {
      if (client === null) return
      // A client that cannot say goodbye is cut off instead.
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect())
      else client.disconnect()
    }))
  }
}

/** The store URL without toolgate's own `prefix` parameter, and that prefix. */
export function parseStoreUrl (raw: string): { connection: string, prefix: string } {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new TypeError('Expected the Redis store URL to be a redis:// or rediss:// URL, got an unparsable value')
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new TypeError(`Expected the Redis store URL to be a redis:// or rediss:// URL, got ${url.protocol}//`)
  }
  const prefix = url.searchParams.get('prefix') ?? DEFAULT_PREFIX
  url.searchParams.delete('prefix')
  return { connection: url.toString(), prefix }
}

/** Whether a client lost its connection (and is reconnecting or gave up). */
export function lost (client: Redis): boolean {
  return client.status === 'reconnecting' || client.status === 'close' || client.status === 'end'
}
