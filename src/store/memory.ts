import type { Receipt } from '../receipts/types.js'
import type { RunRecord } from '../runs/types.js'
import { type BatchEntry, type BatchIdEntry, type BatchRecord, type BatchSummary, type RunCursor, type RunPage, batchEntry, type CancelListener, type CancelReason, type Store, StoreFullError, type StoredReceipt, type UpdateResult, holds, markEnded } from './types.js'

export { StoreFullError } from './types.js'

/** Bounds and clocks of the memory store. */
export interface MemoryStoreOptions {
  /** Idle runs expire this long after their last use. */
  runTtlMs: number
  /** Most runs held; see `createRun` for who is evicted. */
  maxRuns: number
  /** Receipts outlive their run by at least this long. */
  receiptRetentionMs: number
  /** Most receipts held. */
  maxReceipts: number
  now?: () => number
  /** How often expired runs and receipts are swept; 0 sweeps only on access. */
  sweepIntervalMs?: number
}

interface HeldReceipt extends StoredReceipt {
  /** when the run went away, or null while it lives */
  orphanedAt: number | null
  /** the token of the dispatch whose pending receipt this is, or null once final */
  pending: string | null
}

/**
 * The default store: one process, everything in maps. Atomic per run because
 * `updateRun` runs its function synchronously. Runs are kept in a Map in
 * least-recently-used order (a touch re-inserts), so expiry and eviction walk
 * from the oldest end and stop early.
 */
export class MemoryStore implements Store {
  readonly #runs = new Map<string, RunRecord>()
  /** Ended runs, oldest first: the first to go when the store is full. */
  readonly #ended = new Set<string>()
  /** Each run's batch ids and their answers; made with the run's first batch, so an idle run holds none. */
  readonly #batches = new Map<string, Map<string, HeldBatch>>()
  readonly #receipts = new Map<string, HeldReceipt>()
  readonly #receiptsByRun = new Map<string, string[]>()
  readonly #opts: Required<MemoryStoreOptions>
  readonly #cancelListeners = new Set<CancelListener>()
  /** Operation id of an unresolved uncertain write → its run; entries go with the run. */
  readonly #uncertainRuns = new Map<string, string>()
  readonly #locks = new Map<string, { owner: string, until: number }>()
  /** Runs whose record holds a waiting batch. */
  readonly #waiting = new Set<string>()
  #timer: NodeJS.Timeout | null = null

  constructor (opts: MemoryStoreOptions) {
    this.#opts = { now: Date.now, sweepIntervalMs: Math.min(60_000, opts.runTtlMs), ...opts }
    if (this.#opts.sweepIntervalMs > 0) {
      this.#timer = setInterval(() => this.sweep(), this.#opts.sweepIntervalMs)
      this.#timer.unref()
    }
  }

  async createRun (run: RunRecord): Promise<boolean> {
    this.#expire(run.runId)
    if (this.#runs.has(run.runId)) return false
    if (this.#runs.size >= this.#opts.maxRuns) this.#evictOne()
    if (this.#runs.size >= this.#opts.maxRuns) return Promise.reject(new StoreFullError())
    this.#runs.set(run.runId, run)
    if (run.state === 'ended') this.#ended.add(run.runId)
    return true
  }

  async getRun (runId: string): Promise<RunRecord | undefined> {
    this.#expire(runId)
    return this.#runs.get(runId)
  }

  async updateRun<T> (runId: string, fn: (run: RunRecord) => T): Promise<UpdateResult<T>> {
    return this.#update(runId, fn)
  }

  async updateRunWithBatchId<T> (runId: string, batchId: string, fn: (run: RunRecord, entry: BatchIdEntry) => T): Promise<UpdateResult<T>> {
    return this.#update(runId, (run) => {
      const known = this.#batches.get(runId)?.get(batchId)?.requestHash
      const entry = { batchId, requestHash: known }
      const value = fn(run, entry)
      if (entry.requestHash !== undefined && entry.requestHash !== known) ofRun(this.#batches, runId).set(batchId, new HeldBatch(entry.requestHash))
      return value
    })
  }

  async completeBatch (runId: string, owner: string, answer: BatchRecord | ((run: RunRecord) => BatchRecord)): Promise<boolean> {
    let record: BatchRecord | undefined
    const done = this.#update(runId, (run) => {
      record = typeof answer === 'function' ? answer(run) : answer
      const held = holds(run, owner, record.batchId)
      if (held) run.inFlight = null
      return held
    })
    if (!done.found || !done.value || record === undefined) return false
    const batches = ofRun(this.#batches, runId)
    let held = batches.get(record.batchId)
    if (held === undefined || held.requestHash !== record.requestHash) batches.set(record.batchId, (held = new HeldBatch(record.requestHash)))
    held.answer = Buffer.from(record.responseJson)
    held.completedAt = record.completedAt
    held.summary = record.summary ?? null
    return true
  }

  /** updateRun's work, synchronous, so completeBatch can add to it in the same step. */
  #update<T> (runId: string, fn: (run: RunRecord) => T): UpdateResult<T> {
    this.#expire(runId)
    const run = this.#runs.get(runId)
    if (run === undefined) return { found: false }
    const value = fn(run)
    if (run.waiting != null) this.#waiting.add(runId)
    else if (this.#waiting.size > 0) this.#waiting.delete(runId)
    run.lastActiveAt = this.#opts.now()
    this.#runs.delete(runId)
    this.#runs.set(runId, run)
    if (run.state === 'ended') this.#ended.add(runId)
    return { found: true, value }
  }

  async endRun (runId: string, at: number): Promise<RunRecord | undefined> {
    const result = await this.updateRun(runId, (run) => markEnded(run, at))
    this.#batches.delete(runId)
    return result.found ? result.value : undefined
  }

  async getBatch (runId: string, batchId: string): Promise<BatchRecord | undefined> {
    const held = this.#batches.get(runId)?.get(batchId)
    if (held?.answer == null) return undefined
    const record: BatchRecord = { batchId, requestHash: held.requestHash, responseJson: held.answer.toString(), completedAt: held.completedAt }
    if (held.summary !== null) record.summary = held.summary
    return record
  }

  async listBatches (runId: string): Promise<BatchEntry[]> {
    this.#expire(runId)
    const out: BatchEntry[] = []
    for (const [batchId, held] of this.#batches.get(runId) ?? []) {
      if (held.answer === null) continue
      const { completedAt, summary } = held
      out.push(summary === null
        ? batchEntry({ batchId, requestHash: held.requestHash, completedAt, responseJson: held.answer.toString() })
        : { batchId, completedAt, ...summary, statuses: { ...summary.statuses } })
    }
    return out
  }

  async listRuns (tenant: string, limit: number, after?: RunCursor): Promise<RunPage> {
    const now = this.#opts.now()
    const mine: RunRecord[] = []
    for (const run of this.#runs.values()) {
      if (run.tenant !== tenant || this.#expired(run, now)) continue
      if (after !== undefined && !before(run.lastActiveAt, run.runId, after)) continue
      mine.push(run)
    }
    mine.sort((a, b) => b.lastActiveAt - a.lastActiveAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0))
    const runs = mine.slice(0, limit)
    const last = runs.at(-1)
    return { runs, next: mine.length > limit && last !== undefined ? { at: last.lastActiveAt, runId: last.runId } : null }
  }

  async putReceipt (receipt: Receipt, tenant: string, pending?: string): Promise<Receipt> {
    const existing = this.#receipts.get(receipt.operationId)
    if (existing !== undefined) return existing.receipt
    this.#receipts.set(receipt.operationId, { receipt, tenant, orphanedAt: this.#runs.has(receipt.runId) ? null : this.#opts.now(), pending: pending ?? null })
    let ids = this.#receiptsByRun.get(receipt.runId)
    if (ids === undefined) this.#receiptsByRun.set(receipt.runId, (ids = []))
    ids.push(receipt.operationId)
    if (this.#receipts.size > this.#opts.maxReceipts) this.#evictReceipts()
    return receipt
  }

  async settleReceipt (receipt: Receipt, _tenant: string, pending: string): Promise<boolean> {
    const held = this.#receipts.get(receipt.operationId)
    if (held === undefined || held.pending !== pending || this.#receiptExpired(held)) return false
    // In place: the map's order, the journal entry and the retention clock stay the pending one's.
    held.receipt = receipt
    held.pending = null
    return true
  }

  async getReceipt (operationId: string): Promise<StoredReceipt | undefined> {
    const stored = this.#receipts.get(operationId)
    if (stored === undefined) return undefined
    if (this.#receiptExpired(stored)) {
      this.#dropReceipt(operationId)
      return undefined
    }
    return { receipt: stored.receipt, tenant: stored.tenant }
  }

  async listReceipts (runId: string): Promise<Receipt[]> {
    const out: Receipt[] = []
    for (const id of this.#receiptsByRun.get(runId) ?? []) {
      const r = await this.getReceipt(id)
      if (r !== undefined) out.push(r.receipt)
    }
    return out
  }

  async reviseReceipt (operationId: string, fn: (receipt: Receipt) => Receipt | undefined): Promise<Receipt | undefined> {
    const held = (await this.getReceipt(operationId)) === undefined ? undefined : this.#receipts.get(operationId)
    if (held === undefined) return undefined
    const next = fn(held.receipt)
    if (next === undefined) return held.receipt
    held.receipt = next
    held.pending = null
    return next
  }

  async indexUncertain (runId: string, operationIds: readonly string[]): Promise<void> {
    if (!this.#runs.has(runId)) return
    for (const id of operationIds) this.#uncertainRuns.set(id, runId)
  }

  async unindexUncertain (operationId: string): Promise<void> {
    this.#uncertainRuns.delete(operationId)
  }

  async runOfUncertain (operationId: string): Promise<string | undefined> {
    const runId = this.#uncertainRuns.get(operationId)
    if (runId !== undefined) this.#expire(runId)
    return runId !== undefined && this.#runs.has(runId) ? runId : undefined
  }

  async countUncertain (): Promise<number> {
    let n = 0
    const now = this.#opts.now()
    // An expired run not swept yet is gone for every other method: not counted either.
    for (const run of this.#runs.values()) if (!this.#expired(run, now)) n += run.uncertain?.length ?? 0
    return n
  }

  async tryLock (name: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = this.#opts.now()
    const held = this.#locks.get(name)
    if (held !== undefined && held.until > now && held.owner !== owner) return false
    this.#locks.set(name, { owner, until: now + ttlMs })
    return true
  }

  async unlock (name: string, owner: string): Promise<void> {
    if (this.#locks.get(name)?.owner === owner) this.#locks.delete(name)
  }

  async waitingRuns (): Promise<RunRecord[]> {
    const out: RunRecord[] = []
    for (const runId of this.#waiting) {
      const run = this.#runs.get(runId)
      if (run?.waiting != null) out.push(run)
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

  /** One process: the listeners are every replica there is. */
  async publishCancel (runId: string, reason: CancelReason): Promise<void> {
    for (const listener of this.#cancelListeners) listener(runId, reason)
  }

  onCancel (listener: CancelListener): () => void {
    // A wrapper, so one function subscribed twice is two subscriptions.
    const wrapped: CancelListener = (runId, reason) => listener(runId, reason)
    this.#cancelListeners.add(wrapped)
    return () => { this.#cancelListeners.delete(wrapped) }
  }

  async ready (): Promise<boolean> { return true }

  async close (): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }

  /** Drops expired runs (oldest first) and receipts past retention. */
  sweep (): void {
    const now = this.#opts.now()
    for (const [name, lock] of this.#locks) if (lock.until <= now) this.#locks.delete(name)
    for (const [runId, run] of this.#runs) {
      if (run.lastActiveAt + this.#opts.runTtlMs > now) break
      if (run.inFlight === null) this.#remove(runId)
    }
    for (const [id, stored] of this.#receipts) {
      if (stored.orphanedAt === null) continue
      if (this.#receiptExpired(stored)) this.#dropReceipt(id)
    }
  }

  #expire (runId: string): void {
    const run = this.#runs.get(runId)
    if (run !== undefined && this.#expired(run, this.#opts.now())) this.#remove(runId)
  }

  #expired (run: RunRecord, now: number): boolean {
    return run.inFlight === null && run.lastActiveAt + this.#opts.runTtlMs <= now
  }

  #evictOne (): void {
    for (const runId of this.#ended) {
      // A run ended during its batch keeps its lease until the batch finishes.
      if (this.#runs.get(runId)?.inFlight != null) continue
      this.#remove(runId)
      return
    }
    for (const [runId, run] of this.#runs) {
      if (run.inFlight === null) {
        this.#remove(runId)
        return
      }
    }
  }

  #remove (runId: string): void {
    for (const u of this.#runs.get(runId)?.uncertain ?? []) this.#uncertainRuns.delete(u.operationId)
    this.#runs.delete(runId)
    this.#waiting.delete(runId)
    this.#ended.delete(runId)
    this.#batches.delete(runId)
    const now = this.#opts.now()
    for (const id of this.#receiptsByRun.get(runId) ?? []) {
      const stored = this.#receipts.get(id)
      if (stored !== undefined && stored.orphanedAt === null) stored.orphanedAt = now
    }
  }

  #receiptExpired (stored: HeldReceipt): boolean {
    return stored.orphanedAt !== null && stored.orphanedAt + this.#opts.receiptRetentionMs <= this.#opts.now()
  }

  #dropReceipt (operationId: string): void {
    const stored = this.#receipts.get(operationId)
    if (stored === undefined) return
    this.#receipts.delete(operationId)
    const ids = this.#receiptsByRun.get(stored.receipt.runId)
    if (ids === undefined) return
    const i = ids.indexOf(operationId)
    if (i >= 0) ids.splice(i, 1)
    if (ids.length === 0) this.#receiptsByRun.delete(stored.receipt.runId)
  }

  /** Over the bound: receipts of runs that are gone go first, oldest first; then the oldest of all. */
  #evictReceipts (): void {
    for (const [id, stored] of this.#receipts) {
      if (this.#receipts.size <= this.#opts.maxReceipts) return
      if (stored.orphanedAt !== null) this.#dropReceipt(id)
    }
    for (const id of this.#receipts.keys()) {
      if (this.#receipts.size <= this.#opts.maxReceipts) return
      this.#dropReceipt(id)
    }
  }
}

/**
 * A batch id a run got, with the hash of its calls and, once it finished,
 * its answer. The answer is held as UTF-8 bytes outside the JavaScript heap:
 * every batch's answer is kept as long as its run, and as a string each one
 * was copied by two scavenges and then marked by every full collection
 * (about 10 µs of collector time per batch); a Buffer is one small object.
 */
class HeldBatch {
  readonly requestHash: string
  answer: Buffer | null = null
  completedAt = 0
  summary: BatchSummary | null = null
  constructor (requestHash: string) {
    this.requestHash = requestHash
  }
}

/** Whether a run used at `at` comes after the cursor in most-recently-used-first order (ties by id, descending). */
function before (at: number, runId: string, cursor: RunCursor): boolean {
  return at < cursor.at || (at === cursor.at && runId < cursor.runId)
}

/** A run's map among the maps of every run, made when the run first needs it. */
function ofRun<V> (maps: Map<string, Map<string, V>>, runId: string): Map<string, V> {
  let map = maps.get(runId)
  if (map === undefined) maps.set(runId, (map = new Map()))
  return map
}
