import { type Incarnation, isIncarnation } from '../model/incarnation.js'
import type { RunRecord } from '../model/run.js'
import { MemoryBatchAnswers } from './memory-batches.js'
import { type BatchIdEntry, type BatchRecord, type RunCursor, type RunPage, type SharedCompletion, StoreFullError, TenantRunsQuotaError, TenantWaitingQuotaError, type UpdateResult, holds, markEnded, readWaiting } from './records.js'
import type { RunStateStore } from './run-state.js'

/** Bounds and clock of the memory run state. */
export interface MemoryRunOptions {
  /** Idle runs expire this long after their last use. */
  runTtlMs: number
  /** Most runs held; see `createRun` for who is evicted. */
  maxRuns: number
  /**
   * Most bytes of batch answers held (kept for resends, as long as their
   * run); over it the tenant whose runs hold the most gives up runs, its
   * ended ones first, then its least recently used idle ones. @default no bound
   */
  maxAnswerBytes?: number
  /** Most runs one tenant holds; `createRun` refuses one more (TenantRunsQuotaError). @default no bound */
  maxRunsPerTenant?: number
  /** Most runs of one tenant with a waiting batch; an update making one more wait is refused (TenantWaitingQuotaError). @default no bound */
  maxWaitingPerTenant?: number
  now: () => number
}

/** Told of every run that leaves the store (expired, evicted), with the time it left. */
export type RunGoneListener = (run: RunRecord, at: number) => void

/**
 * Run records in one process. Atomic per run because `updateRun` runs its
 * function synchronously. Runs are kept in a Map in least-recently-used
 * order (a touch re-inserts), so expiry and eviction walk from the oldest
 * end and stop early. Batch ids and answers are in `answers`, written in the
 * same synchronous steps.
 */
export class MemoryRunState implements RunStateStore {
  readonly #runs = new Map<string, RunRecord>()
  /** Ended runs, oldest first: the first to go when the store is full. */
  readonly #ended = new Set<string>()
  /** Runs whose record holds a waiting batch. */
  readonly #waiting = new Set<string>()
  readonly #opts: MemoryRunOptions
  readonly #gone: RunGoneListener[] = []
  readonly #created: Array<(runId: string) => void> = []
  readonly #completed: Array<(run: RunRecord, answeredWrites: readonly string[] | null) => void> = []
  /** How many runs each tenant holds (expired ones not swept yet included). */
  readonly #perTenant = new Map<string, number>()
  /** How many runs of each tenant hold a waiting batch. */
  readonly #waitingPerTenant = new Map<string, number>()
  /** The batch answers this run state writes, read through the `BatchAnswers` contract. */
  readonly answers = new MemoryBatchAnswers((runId) => this.expire(runId))

  constructor (opts: MemoryRunOptions) {
    this.#opts = opts
  }

  /** Adds a listener told of each run that leaves (its receipts and uncertain writes follow it). */
  onGone (listener: RunGoneListener): void {
    this.#gone.push(listener)
  }

  /** Adds a listener told of each run stored: a new incarnation of its id, which must see nothing of an earlier one. */
  onCreated (listener: (runId: string) => void): void {
    this.#created.push(listener)
  }

  /** Adds a listener told of each batch answer stored, in the same step (the run's write-ahead records are answered by it: all, or those named when the lease is shared). */
  onCompleted (listener: (run: RunRecord, answeredWrites: readonly string[] | null) => void): void {
    this.#completed.push(listener)
  }

  async createRun (run: RunRecord): Promise<boolean> {
    this.expire(run.runId)
    if (this.#runs.has(run.runId)) return false
    // The tenant's quota first: a tenant at its quota never evicts another tenant's run.
    const quota = this.#opts.maxRunsPerTenant
    if (quota !== undefined && (this.#perTenant.get(run.tenant) ?? 0) >= quota) {
      this.sweep()
      // Its own ended run goes first, as from a full store: an ended run only waits to expire.
      if ((this.#perTenant.get(run.tenant) ?? 0) >= quota) this.#evictEndedOf(run.tenant)
      if ((this.#perTenant.get(run.tenant) ?? 0) >= quota) return Promise.reject(new TenantRunsQuotaError(quota))
    }
    if (this.#runs.size >= this.#opts.maxRuns) this.#evictOne()
    if (this.#runs.size >= this.#opts.maxRuns) return Promise.reject(new StoreFullError())
    // A new incarnation of the id (SPEC section 19): no batch id or answer of an earlier run of it is replayed.
    this.answers.drop(run.runId)
    for (const listener of this.#created) listener(run.runId)
    this.#runs.set(run.runId, run)
    this.#perTenant.set(run.tenant, (this.#perTenant.get(run.tenant) ?? 0) + 1)
    if (run.state === 'ended') this.#ended.add(run.runId)
    return true
  }

  async getRun (runId: string): Promise<RunRecord | undefined> {
    return this.peek(runId)
  }

  async updateRun<T> (runId: string, fn: (run: RunRecord) => T): Promise<UpdateResult<T>> {
    return this.#update(runId, fn)
  }

  async updateRunWithBatchId<T> (runId: string, batchId: string, fn: (run: RunRecord, entry: BatchIdEntry) => T): Promise<UpdateResult<T>> {
    return this.#update(runId, (run) => {
      const recorded = this.answers.hashOf(runId, batchId)
      const entry = { batchId, requestHash: recorded }
      const value = fn(run, entry)
      if (entry.requestHash !== undefined && entry.requestHash !== recorded) this.answers.record(runId, batchId, entry.requestHash)
      return value
    })
  }

  async completeBatch (runId: string, owner: string, answer: BatchRecord | ((run: RunRecord) => BatchRecord), incarnation?: Incarnation, shared?: SharedCompletion): Promise<boolean> {
    let record: BatchRecord | undefined
    const held = this.#runs.get(runId)
    if (held !== undefined && incarnation !== undefined && !isIncarnation(held, incarnation)) return false
    let completed: RunRecord | undefined
    const done = this.#update(runId, (run) => {
      record = typeof answer === 'function' ? answer(run) : answer
      const held = holds(run, owner, shared?.leaseId ?? record.batchId)
      if (held && (shared === undefined || shared.release)) run.inFlight = null
      completed = run
      return held
    })
    if (!done.found || !done.value || record === undefined) return false
    this.answers.store(runId, record, completed!.tenant)
    this.#boundAnswers(runId)
    const answered = shared === undefined || shared.release ? null : shared.answeredWrites
    for (const listener of this.#completed) listener(completed!, answered)
    return true
  }

  async recordBatch (runId: string, batchId: string, fn: (run: RunRecord, recorded: string | undefined) => BatchRecord | undefined): Promise<boolean> {
    let record: BatchRecord | undefined
    const done = this.#update(runId, (run) => {
      record = fn(run, this.answers.hashOf(runId, batchId))
    })
    if (!done.found || record === undefined) return false
    // The id and its answer together, in the update's synchronous step; no lease is released, no write-ahead record answered.
    this.answers.store(runId, { ...record, batchId }, this.#runs.get(runId)!.tenant)
    this.#boundAnswers(runId)
    return true
  }

  /** updateRun's work, synchronous, so completeBatch and recordBatch can add to it in the same step. */
  #update<T> (runId: string, fn: (run: RunRecord) => T): UpdateResult<T> {
    const run = this.peek(runId)
    if (run === undefined) return { found: false }
    const wasWaiting = this.#waiting.has(runId)
    const quota = this.#opts.maxWaitingPerTenant
    // At its quota, the tenant's update is checked after `fn`, and undone when it made this run wait too.
    const before = quota !== undefined && !wasWaiting && count(this.#waitingPerTenant, run.tenant) >= quota ? structuredClone(run) : undefined
    const value = fn(run)
    if (before !== undefined && run.waiting != null) {
      for (const key of Object.keys(run)) delete (run as unknown as Record<string, unknown>)[key]
      Object.assign(run, before)
      throw new TenantWaitingQuotaError(quota!)
    }
    if (run.waiting != null) {
      if (!wasWaiting) this.#countWaiting(run.tenant, 1)
      this.#waiting.add(runId)
    } else if (wasWaiting) {
      this.#countWaiting(run.tenant, -1)
      this.#waiting.delete(runId)
    }
    run.lastActiveAt = this.#opts.now()
    this.#runs.delete(runId)
    this.#runs.set(runId, run)
    if (run.state === 'ended') this.#ended.add(runId)
    return { found: true, value }
  }

  async endRun (runId: string, at: number, end?: (run: RunRecord) => void): Promise<RunRecord | undefined> {
    const result = await this.updateRun(runId, (run) => markEnded(run, at, end))
    this.answers.drop(runId)
    return result.found ? result.value : undefined
  }

  async listRuns (tenant: string, limit: number, after?: RunCursor): Promise<RunPage> {
    const now = this.#opts.now()
    const mine: RunRecord[] = []
    for (const run of this.#runs.values()) {
      if (run.tenant !== tenant || this.expired(run, now)) continue
      if (after !== undefined && !before(run.lastActiveAt, run.runId, after)) continue
      mine.push(run)
    }
    mine.sort((a, b) => b.lastActiveAt - a.lastActiveAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0))
    const runs = mine.slice(0, limit)
    const last = runs.at(-1)
    return { runs, next: mine.length > limit && last !== undefined ? { at: last.lastActiveAt, runId: last.runId } : null }
  }

  async waitingRuns (): Promise<RunRecord[]> {
    const out: RunRecord[] = []
    for (const runId of this.#waiting) {
      const run = this.#runs.get(runId)
      if (run?.waiting != null) out.push(readWaiting(run))
    }
    return out
  }

  async countRuns (): Promise<{ total: number, active: number, inFlight: number }> {
    let active = 0
    let inFlight = 0
    for (const run of this.#runs.values()) {
      if (run.state === 'active') active++
      if (run.inFlight !== null) inFlight++
    }
    return { total: this.#runs.size, active, inFlight }
  }

  /** The run as held now, read synchronously (expired first): for parts whose step must not yield. */
  peek (runId: string): RunRecord | undefined {
    this.expire(runId)
    const run = this.#runs.get(runId)
    return run === undefined ? undefined : readWaiting(run)
  }

  /** Whether the run is held, expired or not (the journal and the uncertain index ask without expiring it). */
  has (runId: string): boolean {
    return this.#runs.has(runId)
  }

  /** Every run held, expired ones not swept yet included (check `expired`). */
  records (): IterableIterator<RunRecord> {
    return this.#runs.values()
  }

  /** Drops expired runs, oldest first. */
  sweep (): void {
    const now = this.#opts.now()
    for (const [runId, run] of this.#runs) {
      if (run.lastActiveAt + this.#opts.runTtlMs > now) break
      if (run.inFlight === null) this.#remove(runId)
    }
  }

  /** Drops the run if it expired: every read does this first, so an expired run is gone before any sweep. */
  expire (runId: string): void {
    const run = this.#runs.get(runId)
    if (run !== undefined && this.expired(run, this.#opts.now())) this.#remove(runId)
  }

  /** Idle for runTtl, with no batch in flight. */
  expired (run: RunRecord, now: number): boolean {
    return run.inFlight === null && run.lastActiveAt + this.#opts.runTtlMs <= now
  }

  /** Removes the tenant's ended run that ended first and has no batch in flight, if it has one. */
  #evictEndedOf (tenant: string): void {
    const victim = this.#victim((_, run) => run.tenant === tenant && run.inFlight == null, false)
    if (victim !== undefined) this.#remove(victim)
  }

  /**
   * Over the bound on answers' bytes: the tenant whose runs hold the most
   * gives up runs, its ended ones first, then its least recently used idle
   * ones, `keep` (the run just answered) last, never one with a batch in
   * flight or waiting for a decision, until the answers fit or it has none
   * left to give. A run that holds more than the bound by itself is given
   * up once it is idle, as the run just answered.
   */
  #boundAnswers (keep: string): void {
    const max = this.#opts.maxAnswerBytes
    while (max !== undefined && this.answers.bytes > max) {
      const tenant = this.answers.largestTenant()
      if (tenant === undefined) return
      // Not one a person is deciding on (a waiting batch), whose answer is still to come.
      const idle = (run: RunRecord | undefined): boolean => run?.tenant === tenant && run.inFlight === null && run.waiting == null
      const victim = this.#victim((runId, run) => runId !== keep && idle(run), true) ?? (idle(this.#runs.get(keep)) ? keep : undefined)
      if (victim === undefined) return
      this.#remove(victim)
    }
  }

  /** The store is full: its ended run that ended first goes, else its least recently used idle run; never one with a batch in flight. */
  #evictOne (): void {
    // A run ended during its batch keeps its lease until the batch finishes.
    const victim = this.#victim((_, run) => run.inFlight == null, true)
    if (victim !== undefined) this.#remove(victim)
  }

  /** The first run `accept` lets go: of the ended runs, the one that ended first; then, with `anyRun`, of every run, the least recently used. */
  #victim (accept: (runId: string, run: RunRecord) => boolean, anyRun: boolean): string | undefined {
    for (const runId of this.#ended) {
      const run = this.#runs.get(runId)
      if (run !== undefined && accept(runId, run)) return runId
    }
    if (anyRun) for (const [runId, run] of this.#runs) if (accept(runId, run)) return runId
    return undefined
  }

  #countWaiting (tenant: string, by: 1 | -1): void {
    const n = count(this.#waitingPerTenant, tenant) + by
    if (n > 0) this.#waitingPerTenant.set(tenant, n)
    else this.#waitingPerTenant.delete(tenant)
  }

  #remove (runId: string): void {
    const run = this.#runs.get(runId)
    this.#runs.delete(runId)
    const wasWaiting = this.#waiting.delete(runId)
    this.#ended.delete(runId)
    this.answers.drop(runId)
    if (run === undefined) return
    if (wasWaiting) this.#countWaiting(run.tenant, -1)
    const held = (this.#perTenant.get(run.tenant) ?? 1) - 1
    if (held > 0) this.#perTenant.set(run.tenant, held)
    else this.#perTenant.delete(run.tenant)
    const at = this.#opts.now()
    for (const listener of this.#gone) listener(run, at)
  }
}

function count (counts: ReadonlyMap<string, number>, tenant: string): number {
  return counts.get(tenant) ?? 0
}

/** Whether a run used at `at` comes after the cursor in most-recently-used-first order (ties by id, descending). */
function before (at: number, runId: string, cursor: RunCursor): boolean {
  return at < cursor.at || (at === cursor.at && runId < cursor.runId)
}
