import { randomUUID } from 'node:crypto'
import { Redis, type RedisOptions } from 'ioredis'
import type { Logger } from 'pino'
import type { Receipt } from '../receipts/types.js'
import type { RunRecord } from '../runs/types.js'
import { COUNT_RUNS, CREATE_RUN, LIST_RUNS, PUT_RECEIPT, SETTLE_RECEIPT, type Script, UPDATE_RUN } from './redis-scripts.js'
import { COUNT_UNCERTAIN, INDEX_UNCERTAIN, REVISE_RECEIPT, TRY_LOCK, UNINDEX_UNCERTAIN, UNLOCK } from './redis-uncertain-scripts.js'
import {
  type BatchEntry, type BatchIdEntry, holds, type BatchRecord, batchEntry, type RunCursor, type RunPage, type CancelListener, type CancelReason, type Store, StoreFullError, type StoredReceipt,
  StoreUnavailableError, type UpdateResult, markEnded
} from './types.js'

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
  /** Receipts outlive their run by at least this long. */
  receiptRetentionMs: number
  /** A command unanswered this long fails (503 to the client). @default 5000 */
  commandTimeoutMs?: number
  /** Compare-and-set attempts of one `updateRun` before it gives up (503). @default 100 */
  maxUpdateAttempts?: number
  /** Connection loss and recovery are logged here (never the URL). */
  logger?: Pick<Logger, 'warn' | 'info'>
  now?: () => number
}

export const DEFAULT_PREFIX = 'toolgate:'
const DEFAULT_COMMAND_TIMEOUT_MS = 5000
const DEFAULT_MAX_UPDATE_ATTEMPTS = 100
/** How many runs from the cheap end of an index `createRun` looks at for one to evict. */
const EVICTION_SCAN = 1000
const LIST_CHUNK = 500

/** How a compare-and-set went; a conflict answers the version, record and batch id entry it found. */
type Write = { kind: 'ok', json: string } | { kind: 'gone' } | { kind: 'conflict', found: Versioned | undefined }

/** A run record and its version, as written or as a lost compare-and-set answered them, and the hash of the batch id asked about. */
interface Versioned { version: string, json: string, hash?: string | undefined }

/** Most runs whose last written version is kept here (the least recently written go first). */
const MAX_KNOWN = 10_000

/** What an update reads and writes beside the run record, in the same compare-and-set. */
interface Beside {
  /** A batch id whose hash is read with the record, and written when `fn` recorded one. */
  entry?: { batchId: string, requestHash: string | undefined }
  /** A finished batch's answer to store. */
  record?: BatchRecord
  /** Drops the run's batch ids and batch records (endRun). */
  dropBatches?: boolean
}

/** The value of an operation's key: its receipt and tenant, and while it is pending the token of the dispatch that wrote it. */
interface HeldValue extends StoredReceipt { pending?: string }

interface CancelMessage { runId: string, reason: CancelReason, origin: string }

/**
 * What this store has asked of Redis so far: round trips (requests it waited
 * on; commands sent together in one MULTI or one pipelined batch count once)
 * and commands (a script counts once, however many keys it touches).
 */
export interface RedisTraffic { roundTrips: number, commands: number }

/**
 * The shared store of several replicas. Run records are JSON with a version;
 * `updateRun` reads, runs `fn` on that fresh copy, and writes back with a Lua
 * compare-and-set, re-reading and re-running `fn` when another replica wrote
 * first (a run with a batch in flight starts from the version last written
 * here instead of reading it; see #update). Updates of one run from this
 * process are queued, so the compare-and-set only ever races other
 * processes. Expiry is Redis's own (PEXPIRE), computed as the memory store
 * computes it; see redis-scripts.ts for the keys.
 */
export class RedisStore implements Store {
  readonly #redis: Redis
  #sub: Redis | null = null
  #subscribed: Promise<void> = Promise.resolve()
  readonly #prefix: string
  readonly #opts: Required<Omit<RedisStoreOptions, 'url' | 'prefix' | 'logger'>> & Pick<RedisStoreOptions, 'logger'>
  readonly #origin = randomUUID()
  readonly #queues = new Map<string, Promise<unknown>>()
  /** Runs as last written from here: their next update skips the read (see #update). */
  readonly #known = new Map<string, Versioned>()
  /** Makes this process's versions unique: see #nextVersion. */
  #written = 0
  readonly #cancelListeners = new Set<CancelListener>()
  readonly #traffic: RedisTraffic = { roundTrips: 0, commands: 0 }
  #down = false
  #closed = false

  constructor (opts: RedisStoreOptions) {
    const url = parseStoreUrl(opts.url)
    this.#prefix = opts.prefix ?? url.prefix
    if (this.#prefix === '') throw new TypeError('Expected `prefix` of the Redis store to be a non-empty string, got ""')
    for (const name of ['runTtlMs', 'maxRuns', 'receiptRetentionMs', 'commandTimeoutMs', 'maxUpdateAttempts'] as const) {
      const v = opts[name]
      if (v !== undefined && (!Number.isSafeInteger(v) || v < (name === 'receiptRetentionMs' ? 0 : 1))) {
        throw new TypeError(`Expected \`${name}\` of the Redis store to be a positive integer, got ${String(v)}`)
      }
    }
    this.#opts = {
      runTtlMs: opts.runTtlMs,
      maxRuns: opts.maxRuns,
      receiptRetentionMs: opts.receiptRetentionMs,
      commandTimeoutMs: opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
      maxUpdateAttempts: opts.maxUpdateAttempts ?? DEFAULT_MAX_UPDATE_ATTEMPTS,
      now: opts.now ?? Date.now,
      logger: opts.logger
    }
    this.#redis = new Redis(url.connection, this.#connectionOptions())
    this.#watch(this.#redis, 'commands')
  }

  /** The key prefix in use (tests clean up by it). */
  get prefix (): string { return this.#prefix }

  /** Round trips and commands so far (a copy): the bench and the round-trip test read it. */
  traffic (): RedisTraffic { return { ...this.#traffic } }

  async createRun (run: RunRecord): Promise<boolean> {
    const now = this.#opts.now()
    const json = JSON.stringify(run)
    const version = this.#nextVersion()
    const created = await this.#eval(CREATE_RUN,
      [this.#key('run', run.runId), ...this.#indexKeys(run.tenant)],
      [run.runId, json, now, this.#ttl(run, now), run.state, leaseOf(run), this.#opts.maxRuns, this.#prefix, EVICTION_SCAN, version])
    if (created === -1) throw new StoreFullError()
    if (created === 1) this.#remember(run.runId, version, json)
    return created === 1
  }

  async getRun (runId: string): Promise<RunRecord | undefined> {
    const json = await this.#call(() => this.#redis.hget(this.#key('run', runId), 'r'))
    return json === null ? undefined : JSON.parse(json) as RunRecord
  }

  updateRun<T> (runId: string, fn: (run: RunRecord) => T): Promise<UpdateResult<T>> {
    return this.#update(runId, fn)
  }

  updateRunWithBatchId<T> (runId: string, batchId: string, fn: (run: RunRecord, entry: BatchIdEntry) => T): Promise<UpdateResult<T>> {
    const entry: Beside['entry'] = { batchId, requestHash: undefined }
    return this.#update(runId, (run) => fn(run, entry), { entry })
  }

  async endRun (runId: string, at: number): Promise<RunRecord | undefined> {
    const result = await this.#update(runId, (run) => markEnded(run, at), { dropBatches: true })
    return result.found ? result.value : undefined
  }

  async getBatch (runId: string, batchId: string): Promise<BatchRecord | undefined> {
    const json = await this.#call(() => this.#redis.hget(this.#key('batches', runId), batchId))
    return json === null ? undefined : JSON.parse(json) as BatchRecord
  }

  async listBatches (runId: string): Promise<BatchEntry[]> {
    const values = await this.#call(() => this.#redis.hvals(this.#key('batches', runId)))
    return values.map((json) => batchEntry(JSON.parse(json) as BatchRecord))
  }

  /** A page of the tenant's runs from its index, scored by expiry: most recently used first, as in the memory store. */
  async listRuns (tenant: string, limit: number, after?: RunCursor): Promise<RunPage> {
    const flat = await this.#eval(LIST_RUNS, [this.#key('tenant', tenant)],
      [this.#opts.now(), this.#prefix, after === undefined ? '+inf' : String(after.at), after?.runId ?? '', limit + 1]) as string[]
    const runs: RunRecord[] = []
    const scores: number[] = []
    for (let i = 0; i < flat.length; i += 2) {
      scores.push(Number(flat[i]))
      runs.push(JSON.parse(flat[i + 1]!) as RunRecord)
    }
    if (runs.length <= limit) return { runs, next: null }
    runs.length = limit
    return { runs, next: { at: scores[limit - 1]!, runId: runs[limit - 1]!.runId } }
  }

  async completeBatch (runId: string, owner: string, record: BatchRecord | ((run: RunRecord) => BatchRecord)): Promise<boolean> {
    // #write reads beside.record after fn, on every attempt: the answer goes with the release, or not at all.
    const beside: Beside = {}
    const done = await this.#update(runId, (run) => {
      const answer = typeof record === 'function' ? record(run) : record
      const held = holds(run, owner, answer.batchId)
      if (held) run.inFlight = null
      beside.record = held ? answer : undefined
      return held
    }, beside)
    return done.found && done.value
  }

  async putReceipt (receipt: Receipt, tenant: string, pending?: string): Promise<Receipt> {
    // The token, when there is one, is the first field: SETTLE_RECEIPT compares the value's opening.
    const stored: HeldValue = pending === undefined ? { receipt, tenant } : { pending, receipt, tenant }
    const existing = await this.#eval(PUT_RECEIPT,
      [this.#key('op', receipt.operationId), this.#key('journal', receipt.runId), this.#key('run', receipt.runId)],
      [JSON.stringify(stored), receipt.operationId, this.#opts.now(), this.#opts.receiptRetentionMs])
    return typeof existing === 'string' ? (JSON.parse(existing) as HeldValue).receipt : receipt
  }

  async settleReceipt (receipt: Receipt, tenant: string, pending: string): Promise<boolean> {
    const stored: HeldValue = { receipt, tenant }
    const replaced = await this.#eval(SETTLE_RECEIPT, [this.#key('op', receipt.operationId)], [pendingOpening(pending), JSON.stringify(stored)])
    return replaced === 1
  }

  async getReceipt (operationId: string): Promise<StoredReceipt | undefined> {
    const json = await this.#call(() => this.#redis.get(this.#key('op', operationId)))
    if (json === null) return undefined
    const { receipt, tenant } = JSON.parse(json) as HeldValue
    return { receipt, tenant }
  }

  async listReceipts (runId: string): Promise<Receipt[]> {
    const ids = await this.#call(() => this.#redis.lrange(this.#key('journal', runId), 0, -1))
    const out: Receipt[] = []
    for (let i = 0; i < ids.length; i += LIST_CHUNK) {
      const keys = ids.slice(i, i + LIST_CHUNK).map((id) => this.#key('op', id))
      const values = await this.#call(() => this.#redis.mget(keys))
      for (const json of values) if (json !== null) out.push((JSON.parse(json) as HeldValue).receipt)
    }
    return out
  }

  async reviseReceipt (operationId: string, fn: (receipt: Receipt) => Receipt | undefined): Promise<Receipt | undefined> {
    const key = this.#key('op', operationId)
    for (let attempt = 1; attempt <= this.#opts.maxUpdateAttempts; attempt++) {
      const json = await this.#call(() => this.#redis.get(key))
      if (json === null) return undefined
      const held = JSON.parse(json) as HeldValue
      const next = fn(held.receipt)
      if (next === undefined) return held.receipt
      const value: HeldValue = { receipt: next, tenant: held.tenant }
      if (await this.#eval(REVISE_RECEIPT, [key], [json, JSON.stringify(value)]) === 1) return next
    }
    throw new StoreUnavailableError(`Receipt ${operationId} was changed by others ${this.#opts.maxUpdateAttempts} times while this replica revised it`)
  }

  async indexUncertain (runId: string, operationIds: readonly string[]): Promise<void> {
    if (operationIds.length === 0) return
    await this.#eval(INDEX_UNCERTAIN, [this.#key('run', runId), this.#key('idx', 'uncertain')],
      [this.#opts.now(), this.#opts.runTtlMs, this.#key('uop', ''), runId, ...operationIds])
  }

  async unindexUncertain (operationId: string): Promise<void> {
    await this.#eval(UNINDEX_UNCERTAIN, [this.#key('uop', operationId), this.#key('idx', 'uncertain')], [operationId])
  }

  async runOfUncertain (operationId: string): Promise<string | undefined> {
    return (await this.#call(() => this.#redis.get(this.#key('uop', operationId)))) ?? undefined
  }

  async countUncertain (): Promise<number> {
    return Number(await this.#eval(COUNT_UNCERTAIN, [this.#key('idx', 'uncertain')], [this.#opts.now()]))
  }

  async tryLock (name: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.#eval(TRY_LOCK, [this.#key('lock', name)], [owner, Math.max(1, Math.ceil(ttlMs))])) === 1
  }

  async unlock (name: string, owner: string): Promise<void> {
    await this.#eval(UNLOCK, [this.#key('lock', name)], [owner])
  }

  async waitingRuns (): Promise<RunRecord[]> {
    const index = this.#key('idx', 'waiting')
    const ids = await this.#call(() => this.#redis.zrange(index, 0, -1))
    const out: RunRecord[] = []
    for (let i = 0; i < ids.length; i += LIST_CHUNK) {
      const chunk = ids.slice(i, i + LIST_CHUNK)
      const values = await this.#call(() => Promise.all(chunk.map((id) => this.#redis.hget(this.#key('run', id), 'r'))), chunk.length)
      for (const [j, json] of values.entries()) {
        if (json === null) {
          // The run expired or was evicted with its waiting batch: its entry goes too.
          await this.#call(() => this.#redis.zrem(index, chunk[j]!))
          continue
        }
        const run = JSON.parse(json) as RunRecord
        if (run.waiting != null) out.push(run)
      }
    }
    return out
  }

  /**
   * From the run indexes, exact up to clock skew between replicas: `inFlight`
   * counts runs whose lease is still valid (a dead replica's run stops
   * counting when its lease expires).
   */
  async countRuns (): Promise<{ total: number, active: number, inFlight: number }> {
    const [total, active, inFlight] = await this.#eval(COUNT_RUNS, this.#indexKeys(), [this.#opts.now()]) as [number, number, number]
    return { total, active, inFlight }
  }

  async publishCancel (runId: string, reason: CancelReason): Promise<void> {
    this.#deliver(runId, reason)
    const message: CancelMessage = { runId, reason, origin: this.#origin }
    await this.#call(() => this.#redis.publish(this.#key('cancel'), JSON.stringify(message)))
  }

  onCancel (listener: CancelListener): () => void {
    const wrapped: CancelListener = (runId, reason) => listener(runId, reason)
    this.#cancelListeners.add(wrapped)
    if (this.#sub === null && !this.#closed) this.#subscribe()
    return () => { this.#cancelListeners.delete(wrapped) }
  }

  /** Settles once the first subscription of `onCancel` reached Redis (or failed; it is retried on reconnection). */
  whenSubscribed (): Promise<void> { return this.#subscribed }

  /** Redis answers a PING, and the cancel subscription (once there is one) is connected. */
  async ready (): Promise<boolean> {
    // While the first connection is being made the PING waits for it; once lost, the answer is no at once.
    if (lost(this.#redis) || (this.#sub !== null && lost(this.#sub))) return false
    try {
      return (await this.#redis.ping()) === 'PONG'
    } catch {
      return false
    }
  }

  async close (): Promise<void> {
    this.#closed = true
    this.#cancelListeners.clear()
    await Promise.all([this.#redis, this.#sub].map(async (client) => {
      if (client === null) return
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect())
      else client.disconnect()
    }))
  }

  /**
   * Compare-and-set of the run on its version, retried; what `beside` holds
   * is read and written in the same steps. A run last written from here
   * (most runs, most of the time: its batches come to the replica that ran
   * the last one, or the replica that created it) starts from that version
   * and record without reading them, assuming that the batch id asked about,
   * if any, is new: that saves a round trip per update. Versions are unique
   * (see #nextVersion), so the compare-and-set tells a run written by
   * another replica, or gone and created again, from the one kept here; it
   * checks the assumed batch id entry too. When what was kept here is out
   * of date it answers the run as it found it, and the update runs again
   * from that at once.
   */
  #update<T> (runId: string, fn: (run: RunRecord) => T, beside: Beside = {}): Promise<UpdateResult<T>> {
    return this.#serial(runId, async () => {
      const { entry } = beside
      let start = this.#known.get(runId)
      let guessed = start !== undefined
      for (let attempt = 1; ; attempt++) {
        if (start === undefined) {
          const read = await this.#read(runId, entry?.batchId)
          if (read === undefined) {
            this.#known.delete(runId)
            return { found: false }
          }
          start = read
        }
        const { version, json, hash } = start
        start = undefined
        if (entry !== undefined) entry.requestHash = hash
        const run = JSON.parse(json) as RunRecord
        const waited = run.waiting != null
        const value = fn(run)
        run.lastActiveAt = this.#opts.now()
        const next = this.#nextVersion()
        const written = await this.#write(run, version, next, beside, entry?.requestHash !== hash ? entry : undefined, hash, waited)
        if (written.kind === 'ok') {
          this.#remember(runId, next, written.json)
          return { found: true, value }
        }
        this.#known.delete(runId)
        if (written.kind === 'gone') return { found: false }
        // What was kept here was out of date: this attempt raced nobody and does not count.
        // The next starts at once from the run as the conflict answered it.
        if (guessed) {
          guessed = false
          start = written.found
          attempt--
          continue
        }
        if (attempt >= this.#opts.maxUpdateAttempts) {
          throw new StoreUnavailableError(`Run ${runId} was changed by other replicas ${attempt} times while this one updated it`)
        }
        // Another replica is writing the run: back off, then read it again.
        await sleep(Math.random() * Math.min(100, 2 ** attempt))
      }
    })
  }

  /** Keeps what was just written of a run, for its next update. */
  #remember (runId: string, version: string, json: string): void {
    this.#known.delete(runId)
    if (this.#known.size >= MAX_KNOWN) this.#known.delete(this.#known.keys().next().value!)
    this.#known.set(runId, { version, json })
  }

  /**
   * A version no other write of any run ever had: this store's random origin
   * and a count. A run that expired and was created again never comes back
   * at a version kept here (a counter from 1 would).
   */
  #nextVersion (): string {
    return `${this.#origin}.${(++this.#written).toString(36)}`
  }

  /**
   * The run's version and record and, for a batch id, its hash, in one
   * atomic read (MULTI): the compare-and-set on the version then covers the
   * hash too, since every write of one bumps the version. Undefined when the
   * run is gone.
   */
  async #read (runId: string, batchId: string | undefined): Promise<Versioned | undefined> {
    const key = this.#key('run', runId)
    let fields: Array<string | null>
    let known: string | null = null
    if (batchId === undefined) {
      fields = await this.#call(() => this.#redis.hmget(key, 'v', 'r'))
    } else {
      [fields, known] = await this.#call(async () => {
        const replies = await this.#redis.multi().hmget(key, 'v', 'r').hget(this.#key('batchids', runId), batchId).exec()
        if (replies === null) throw new Error('the read of the run was aborted')
        for (const [err] of replies) if (err !== null) throw err
        return replies.map(([, reply]) => reply) as [Array<string | null>, string | null]
      }, 4)
    }
    const [version, json] = fields
    return version == null || json == null ? undefined : { version, json, hash: known ?? undefined }
  }

  /** The compare-and-set from `version` to `next`; `recorded` is `beside.entry` when `fn` recorded its batch id, `hash` what its entry was taken to be. */
  async #write (run: RunRecord, version: string, next: string, beside: Beside, recorded: Beside['entry'], hash: string | undefined, waited: boolean): Promise<Write> {
    const now = this.#opts.now()
    const { record } = beside
    const json = JSON.stringify(run)
    const answer = await this.#eval(UPDATE_RUN,
      [this.#key('run', run.runId), this.#key('batches', run.runId), this.#key('batchids', run.runId), this.#key('journal', run.runId), ...this.#indexKeys(run.tenant), this.#key('idx', 'waiting')],
      [version, json, now, this.#ttl(run, now), run.runId, run.state, leaseOf(run),
        this.#opts.receiptRetentionMs, this.#opts.runTtlMs, beside.dropBatches === true ? '1' : '0', this.#key('op', ''),
        record === undefined ? '' : record.batchId, record === undefined ? '' : JSON.stringify(record),
        recorded?.batchId ?? '', recorded?.requestHash ?? '',
        run.waiting != null ? String(run.waiting.expiresAt) : waited ? '-' : '',
        next, beside.entry?.batchId ?? '', hash ?? ''])
    if (answer === 1) return { kind: 'ok', json }
    if (answer === 0) return { kind: 'gone' }
    const [won, wonJson, wonHash] = Array.isArray(answer) ? answer as unknown[] : []
    if (typeof wonJson !== 'string') return { kind: 'conflict', found: undefined }
    return { kind: 'conflict', found: { version: String(won), json: wonJson, hash: typeof wonHash === 'string' && wonHash !== '' ? wonHash : undefined } }
  }

  /** Idle expiry as in the memory store, but never before a valid lease runs out. */
  #ttl (run: RunRecord, now: number): number {
    const idle = run.lastActiveAt + this.#opts.runTtlMs - now
    const lease = run.inFlight === null ? 0 : run.inFlight.leaseExpiresAt - now
    return Math.max(1, Math.ceil(Math.max(idle, lease)))
  }

  /** Runs one run's updates from this process one after another. */
  #serial<T> (runId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(runId)
    const result = previous === undefined ? task() : previous.then(task, task)
    const tail = result.catch(() => {})
    this.#queues.set(runId, tail)
    void tail.then(() => { if (this.#queues.get(runId) === tail) this.#queues.delete(runId) })
    return result
  }

  async #eval (s: Script, keys: string[], args: Array<string | number>): Promise<unknown> {
    return this.#call(async () => {
      try {
        return await this.#redis.evalsha(s.sha, keys.length, ...keys, ...args)
      } catch (err) {
        if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err
        this.#traffic.roundTrips++
        this.#traffic.commands++
        return this.#redis.eval(s.lua, keys.length, ...keys, ...args)
      }
    })
  }

  /** Every Redis failure becomes a StoreUnavailableError, with Redis's message only (never the command's arguments). */
  async #call<T> (op: () => Promise<T>, commands = 1): Promise<T> {
    // Known lost: answer at once rather than queue the command until the next reconnection attempt.
    if (lost(this.#redis)) throw new StoreUnavailableError('The Redis store is unreachable')
    this.#traffic.roundTrips++
    this.#traffic.commands += commands
    try {
      return await op()
    } catch (err) {
      throw new StoreUnavailableError(`The Redis store failed: ${(err as Error).message}`)
    }
  }

  #subscribe (): void {
    const sub = this.#redis.duplicate()
    this.#sub = sub
    this.#watch(sub, 'cancel subscription')
    const channel = this.#key('cancel')
    sub.on('message', (ch: string, text: string) => {
      if (ch !== channel) return
      let message: CancelMessage
      try {
        message = JSON.parse(text) as CancelMessage
      } catch {
        return
      }
      if (message.origin !== this.#origin) this.#deliver(message.runId, message.reason)
    })
    this.#subscribed = sub.subscribe(channel).then(() => {}, (err: Error) => {
      // ioredis subscribes again on every reconnection.
      this.#opts.logger?.warn({ err: { message: err.message } }, 'Redis store: cancel subscription failed; retrying on reconnection')
    })
  }

  #deliver (runId: string, reason: CancelReason): void {
    for (const listener of this.#cancelListeners) listener(runId, reason)
  }

  #watch (client: Redis, role: string): void {
    client.on('error', (err: Error) => {
      if (this.#down || this.#closed) return
      this.#down = true
      this.#opts.logger?.warn({ role, err: { message: err.message } }, 'Redis store unreachable: batches are refused (503) until it is back')
    })
    client.on('ready', () => {
      if (!this.#down) return
      this.#down = false
      this.#opts.logger?.info({ role }, 'Redis store reachable again')
    })
  }

  #connectionOptions (): RedisOptions {
    return {
      connectionName: 'toolgate',
      // Fail fast while Redis is away: a queued command is given up after one
      // reconnection attempt, an unanswered one after the command timeout.
      maxRetriesPerRequest: 1,
      commandTimeout: this.#opts.commandTimeoutMs,
      connectTimeout: this.#opts.commandTimeoutMs,
      retryStrategy: (times: number) => Math.min(times * 100, 1000),
      enableAutoPipelining: true
    }
  }

  #key (kind: string, id?: string): string {
    return id === undefined ? this.#prefix + kind : `${this.#prefix}${kind}:${id}`
  }

  /** The run indexes, and with a tenant that tenant's runs. */
  #indexKeys (tenant?: string): string[] {
    const keys = ['runs', 'active', 'ended', 'leased'].map((name) => this.#key('idx', name))
    if (tenant !== undefined) keys.push(this.#key('tenant', tenant))
    return keys
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

/** How a pending receipt's stored JSON begins: `{"pending":"<token>",`. */
function pendingOpening (pending: string): string {
  return `{"pending":${JSON.stringify(pending)},`
}

function lost (client: Redis): boolean {
  return client.status === 'reconnecting' || client.status === 'close' || client.status === 'end'
}

function leaseOf (run: RunRecord): string {
  return run.inFlight === null ? '' : String(Math.ceil(run.inFlight.leaseExpiresAt))
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

