import { type Incarnation, incarnationKey, isIncarnation } from '../model/incarnation.js'
import { randomUUID } from 'node:crypto'
import type { RunRecord } from '../model/run.js'
import { LIST_CHUNK, type RedisConnection } from './redis-connection.js'
import { type StoredRun, coldJsonOf, decodeCold, decodeStored, hotJsonOf, joinRun, leaseFields, sameCold } from './redis-run-form.js'
import { COUNT_RUNS, CREATE_RUN, LIST_RUNS, UPDATE_RUN } from './redis-scripts.js'
import { type BatchIdEntry, type BatchRecord, type RunCursor, type RunPage, type SharedCompletion, StoreFullError, StoreUnavailableError, TenantRunsQuotaError, TenantWaitingQuotaError, type UpdateResult, holds, markEnded, readWaiting } from './records.js'
import type { RunStateStore } from './run-state.js'

/** Bounds and clock of the Redis run state. */
export interface RedisRunOptions {
  /** Idle runs expire this long after their last use. */
  runTtlMs: number
  /** Most runs held; `createRun` evicts one first, as the memory store does. */
  maxRuns: number
  /** Most runs one tenant holds; 0 for no bound. */
  maxRunsPerTenant: number
  /** Most runs of one tenant with a waiting batch; 0 for no bound. */
  maxWaitingPerTenant: number
  /** Receipts outlive their run by at least this long (the update that keeps a run keeps its receipts: see UPDATE_RUN). */
  receiptRetentionMs: number
  /** Compare-and-set attempts of one `updateRun` before it gives up (503). */
  maxUpdateAttempts: number
  now: () => number
}

/** How many runs from the cheap end of an index `createRun` looks at for one to evict. */
const EVICTION_SCAN = 1000
/** Most runs whose last written version is kept here (the least recently written go first). */
const MAX_LAST_WRITTEN = 10_000

/** How a compare-and-set went; a conflict answers the version, record and batch id entry it found. */
type WriteOutcome = { kind: 'ok', stored: StoredRun } | { kind: 'gone' } | { kind: 'quota' } | { kind: 'conflict', found: Versioned | undefined }

/**
 * A run record (in its stored form) and its version, as written or as a lost
 * compare-and-set answered them, and the hash of the batch id asked about.
 * `run` is the record this process last wrote, decoded: the next update
 * starts from it instead of parsing `stored` again. Like the memory store's
 * record, it is the one object every update of the run changes in turn.
 */
interface Versioned { version: string, stored: StoredRun, hash?: string | undefined, run?: RunRecord }

/** What an update reads and writes with the run record, in the same compare-and-set. */
interface UpdateExtras {
  /** A batch id whose hash is read with the record, and written when `fn` recorded one. */
  entry?: { batchId: string, requestHash: string | undefined }
  /** A finished batch's answer to store. */
  record?: BatchRecord
  /** Drops the run's batch ids and batch records (endRun). */
  dropBatches?: boolean
  /** With `record`, under a shared lease: the write-ahead records it answers (null or absent: every one of the run). */
  answeredWrites?: readonly string[] | null
}

/**
 * Run records in Redis, shared by replicas. Records are JSON in two parts
 * (see redis-run-form.ts) with a version;
 * `updateRun` reads, runs `fn` on that fresh copy, and writes back with a Lua
 * compare-and-set, re-reading and re-running `fn` when another replica wrote
 * first (a run with a batch in flight starts from the version last written
 * here instead of reading it; see #update). Updates of one run from this
 * process are queued, so the compare-and-set only ever races other
 * processes. Expiry is Redis's own (PEXPIRE), computed as the memory store
 * computes it; see redis-scripts.ts for the keys.
 *
 * The update script also writes what the contract keeps atomic with the
 * run: batch ids, batch answers (read by `RedisBatchAnswers`) and the push
 * of the run's receipts' expiry (kept by `RedisReceiptJournal`) under the
 * same prefix, so those parts come from the same Redis.
 */
export class RedisRunState implements RunStateStore {
  readonly #conn: RedisConnection
  readonly #opts: RedisRunOptions
  /** Unique per store instance: makes versions unique (see #nextVersion). */
  readonly #origin = randomUUID()
  readonly #queues = new Map<string, Promise<unknown>>()
  /** Runs as last written from here: their next update skips the read (see #update). */
  readonly #lastWritten = new Map<string, Versioned>()
  /** How many versions this process wrote: see #nextVersion. */
  #written = 0

  constructor (conn: RedisConnection, opts: RedisRunOptions) {
    this.#conn = conn
    this.#opts = opts
  }

  async createRun (run: RunRecord): Promise<boolean> {
    const now = this.#opts.now()
    const hotJson = hotJsonOf(run)
    const coldJson = coldJsonOf(run)
    const version = this.#nextVersion()
    const [exp, owner, batchId] = leaseFields(run)
    const created = await this.#conn.eval(CREATE_RUN,
      [this.#conn.key('run', run.runId), ...this.#conn.indexKeys(run.tenant)],
      [run.runId, hotJson, now, this.#ttl(run, now), run.state, exp, this.#opts.maxRuns, this.#conn.prefix, EVICTION_SCAN, version, this.#opts.maxRunsPerTenant, incarnationKey(run),
        coldJson, owner, batchId])
    if (created === -1) throw new StoreFullError()
    if (created === -2) throw new TenantRunsQuotaError(this.#opts.maxRunsPerTenant)
    if (created === 1) this.#remember(run.runId, version, { cold: decodeCold(coldJson), coldJson, hotJson, coldStored: true })
    return created === 1
  }

  async getRun (runId: string): Promise<RunRecord | undefined> {
    const [hot, cold, whole] = await this.#conn.call(() => this.#conn.redis.hmget(this.#conn.key('run', runId), 'h', 'c', 'r'))
    return readRun(hot, cold, whole)
  }

  updateRun<T> (runId: string, fn: (run: RunRecord) => T): Promise<UpdateResult<T>> {
    return this.#update(runId, fn)
  }

  updateRunWithBatchId<T> (runId: string, batchId: string, fn: (run: RunRecord, entry: BatchIdEntry) => T): Promise<UpdateResult<T>> {
    const entry: UpdateExtras['entry'] = { batchId, requestHash: undefined }
    return this.#update(runId, (run) => fn(run, entry), { entry })
  }

  async endRun (runId: string, at: number, end?: (run: RunRecord) => void): Promise<RunRecord | undefined> {
    const result = await this.#update(runId, (run) => markEnded(run, at, end), { dropBatches: true })
    return result.found ? result.value : undefined
  }

  async completeBatch (runId: string, owner: string, record: BatchRecord | ((run: RunRecord) => BatchRecord), incarnation?: Incarnation, shared?: SharedCompletion): Promise<boolean> {
    // #write reads extras.record after fn, on every attempt: the answer goes with the release, or not at all.
    const extras: UpdateExtras = { answeredWrites: shared === undefined || shared.release ? null : shared.answeredWrites }
    const done = await this.#update(runId, (run) => {
      if (incarnation !== undefined && !isIncarnation(run, incarnation)) {
        extras.record = undefined
        return false
      }
      const answer = typeof record === 'function' ? record(run) : record
      const held = holds(run, owner, shared?.leaseId ?? answer.batchId)
      if (held && (shared === undefined || shared.release)) run.inFlight = null
      extras.record = held ? answer : undefined
      return held
    }, extras)
    return done.found && done.value
  }

  async recordBatch (runId: string, batchId: string, fn: (run: RunRecord, recorded: string | undefined) => BatchRecord | undefined): Promise<boolean> {
    // The id and the answer go with the run's write, or not at all; no write-ahead record is answered ('-').
    const entry: NonNullable<UpdateExtras['entry']> = { batchId, requestHash: undefined }
    const extras: UpdateExtras = { entry, answeredWrites: [] }
    const done = await this.#update(runId, (run) => {
      const record = fn(run, entry.requestHash)
      extras.record = record === undefined ? undefined : { ...record, batchId }
      if (record !== undefined) entry.requestHash = record.requestHash
      return record !== undefined
    }, extras)
    return done.found && done.value
  }

  /** A page of the tenant's runs from its index, scored by expiry: most recently used first, as in the memory store. */
  async listRuns (tenant: string, limit: number, after?: RunCursor): Promise<RunPage> {
    const flat = await this.#conn.eval(LIST_RUNS, [this.#conn.key('tenant', tenant)],
      [this.#opts.now(), this.#conn.prefix, after === undefined ? '+inf' : String(after.at), after?.runId ?? '', limit + 1]) as string[]
    const runs: RunRecord[] = []
    const scores: number[] = []
    for (let i = 0; i < flat.length; i += 3) {
      const run = flat[i + 2] === '' ? readRun(null, null, flat[i + 1]) : readRun(flat[i + 1], flat[i + 2], null)
      if (run === undefined) continue
      scores.push(Number(flat[i]))
      runs.push(run)
    }
    if (runs.length <= limit) return { runs, next: null }
    runs.length = limit
    return { runs, next: { at: scores[limit - 1]!, runId: runs[limit - 1]!.runId } }
  }

  async waitingRuns (): Promise<RunRecord[]> {
    const conn = this.#conn
    const index = conn.key('idx', 'waiting')
    const ids = await conn.call(() => conn.redis.zrange(index, 0, -1))
    const out: RunRecord[] = []
    for (let i = 0; i < ids.length; i += LIST_CHUNK) {
      const chunk = ids.slice(i, i + LIST_CHUNK)
      const values = await conn.call(() => Promise.all(chunk.map((id) => conn.redis.hmget(conn.key('run', id), 'h', 'c', 'r'))), chunk.length)
      for (const [j, [hot, cold, whole]] of values.entries()) {
        const run = readRun(hot, cold, whole)
        if (run === undefined) {
          // The run expired or was evicted with its waiting batch: its entry goes too.
          await conn.call(() => conn.redis.zrem(index, chunk[j]!))
          continue
        }
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
    const [total, active, inFlight] = await this.#conn.eval(COUNT_RUNS, this.#conn.indexKeys(), [this.#opts.now()]) as [number, number, number]
    return { total, active, inFlight }
  }

  /**
   * Compare-and-set of the run on its version, retried; what `extras` holds
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
  #update<T> (runId: string, fn: (run: RunRecord) => T, extras: UpdateExtras = {}): Promise<UpdateResult<T>> {
    return this.#serial(runId, async () => {
      const { entry } = extras
      let start = this.#lastWritten.get(runId)
      let assumed = start !== undefined
      for (let attempt = 1; ; attempt++) {
        if (start === undefined) {
          const read = await this.#read(runId, entry?.batchId)
          if (read === undefined) {
            this.#lastWritten.delete(runId)
            return { found: false }
          }
          start = read
        }
        const { version, stored, hash } = start
        const run = start.run ?? joinRun(stored)
        start = undefined
        if (entry !== undefined) entry.requestHash = hash
        const wasWaiting = run.waiting != null
        const value = fn(run)
        run.lastActiveAt = this.#opts.now()
        const next = this.#nextVersion()
        const written = await this.#write(run, stored, version, next, extras, entry?.requestHash !== hash ? entry : undefined, hash, wasWaiting)
        if (written.kind === 'ok') {
          this.#remember(runId, next, written.stored, run)
          return { found: true, value }
        }
        this.#lastWritten.delete(runId)
        if (written.kind === 'gone') return { found: false }
        if (written.kind === 'quota') throw new TenantWaitingQuotaError(this.#opts.maxWaitingPerTenant)
        // What was kept here was out of date: this attempt raced nobody and does not count.
        // The next starts at once from the run as the conflict answered it.
        if (assumed) {
          assumed = false
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

  /** Keeps what was just written of a run (and, from an update, the record itself), for its next update. */
  #remember (runId: string, version: string, stored: StoredRun, run?: RunRecord): void {
    this.#lastWritten.delete(runId)
    if (this.#lastWritten.size >= MAX_LAST_WRITTEN) this.#lastWritten.delete(this.#lastWritten.keys().next().value!)
    this.#lastWritten.set(runId, { version, stored, run })
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
    const { redis } = this.#conn
    const key = this.#conn.key('run', runId)
    let fields: Array<string | null>
    let recordedHash: string | null = null
    if (batchId === undefined) {
      fields = await this.#conn.call(() => redis.hmget(key, 'v', 'h', 'c', 'r'))
    } else {
      [fields, recordedHash] = await this.#conn.call(async () => {
        const replies = await redis.multi().hmget(key, 'v', 'h', 'c', 'r').hget(this.#conn.key('batchids', runId), batchId).exec()
        if (replies === null) throw new Error('the read of the run was aborted')
        for (const [err] of replies) if (err !== null) throw err
        return replies.map(([, reply]) => reply) as [Array<string | null>, string | null]
      }, 4)
    }
    const [version, hot, cold, whole] = fields
    const stored = version == null ? undefined : decodeStored(hot, cold, whole, this.#lastWritten.get(runId)?.stored)
    return stored === undefined ? undefined : { version: version!, stored, hash: recordedHash ?? undefined }
  }

  /**
   * The compare-and-set from `version` to `next` of `run`, updated from
   * `from`: the hot part always, the cold part only when it changed or was
   * not stored in this form yet. `recorded` is `extras.entry` when `fn`
   * recorded its batch id, `hash` what its entry was taken to be.
   */
  async #write (run: RunRecord, from: StoredRun, version: string, next: string, extras: UpdateExtras, recorded: UpdateExtras['entry'], hash: string | undefined, wasWaiting: boolean): Promise<WriteOutcome> {
    const now = this.#opts.now()
    const { record } = extras
    const hotJson = hotJsonOf(run)
    const coldChanged = !sameCold(run, from.cold)
    const coldJson = coldChanged ? coldJsonOf(run) : from.coldJson
    const [exp, owner, batchId] = leaseFields(run)
    const conn = this.#conn
    const recordJson = record === undefined ? '' : JSON.stringify(record)
    const newCold = coldChanged || !from.coldStored ? coldJson : ''
    // The short arguments as one JSON array of strings (UPDATE_RUN's fourth argument; the three texts go apart,
    // '' in their places): each argument of a command costs the client a few strings to encode.
    const short = JSON.stringify([version, '', String(now), String(this.#ttl(run, now)), run.runId, run.state, exp,
      String(this.#opts.receiptRetentionMs), String(this.#opts.runTtlMs), extras.dropBatches === true ? '1' : '0', conn.key('op', ''),
      record === undefined ? '' : record.batchId, '',
      recorded?.batchId ?? '', recorded?.requestHash ?? '',
      run.waiting != null ? String(run.waiting.expiresAt) : wasWaiting ? '-' : '',
      next, extras.entry?.batchId ?? '', hash ?? '', String(this.#opts.maxWaitingPerTenant), conn.key('run', ''),
      extras.answeredWrites == null ? '' : extras.answeredWrites.length === 0 ? '-' : extras.answeredWrites.join(','),
      '', owner, batchId])
    const answer = await conn.eval(UPDATE_RUN,
      [conn.key('run', run.runId), conn.key('batches', run.runId), conn.key('batchids', run.runId), conn.key('journal', run.runId), ...conn.indexKeys(run.tenant), conn.key('idx', 'waiting'),
        conn.writeAheadKey(run), conn.key('waiting', run.tenant)],
      [hotJson, recordJson, newCold, short])
    if (answer === 1) {
      const cold = coldChanged ? decodeCold(coldJson) : from.cold
      return { kind: 'ok', stored: { cold, coldJson, hotJson, coldStored: true } }
    }
    if (answer === 0) return { kind: 'gone' }
    if (answer === -3) return { kind: 'quota' }
    const [foundVersion, foundHot, foundHash, foundCold, foundWhole] = Array.isArray(answer) ? answer as unknown[] : []
    const stored = decodeStored(foundHot, foundCold, foundWhole, from)
    if (stored === undefined) return { kind: 'conflict', found: undefined }
    return { kind: 'conflict', found: { version: String(foundVersion), stored, hash: typeof foundHash === 'string' && foundHash !== '' ? foundHash : undefined } }
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
    // The queue only orders the tasks: each task's own caller gets its failure.
    const tail = result.catch(() => {})
    this.#queues.set(runId, tail)
    void tail.then(() => { if (this.#queues.get(runId) === tail) this.#queues.delete(runId) })
    return result
  }
}

/** A run as read from its hash's fields (`h`, `c`, `r`), decoded afresh: undefined when it is gone. */
function readRun (hot: unknown, cold: unknown, whole: unknown): RunRecord | undefined {
  if (typeof whole === 'string' && whole !== '') return readWaiting(JSON.parse(whole) as RunRecord)
  if (typeof hot !== 'string' || typeof cold !== 'string') return undefined
  const run = JSON.parse(hot) as RunRecord
  Object.assign(run, JSON.parse(cold))
  return readWaiting(run)
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
