import type { Receipt } from '../receipts/types.js'
import type { RunRecord } from '../runs/types.js'
import { resetRepeats } from '../repeat/tracker.js'
import { WAITING_OWNER } from '../approvals/types.js'

/** The stored answer of a finished batch, replayed on resubmission. */
export interface BatchRecord {
  batchId: string
  requestHash: string
  /** The response body exactly as first answered (JSON text: a leaf for the garbage collector, and sent again as is). */
  responseJson: string
  completedAt: number
  /** What a run's batch list shows of it; absent from answers stored before it existed (then read from the answer). */
  summary?: BatchSummary
}

/** A finished batch as a run's batch list shows it: no results, no arguments. */
export interface BatchSummary {
  turn: number
  /** How many calls the batch had. */
  calls: number
  /** Its calls counted by result status. */
  statuses: Record<string, number>
}

/** One finished batch of a run's list. */
export interface BatchEntry extends BatchSummary {
  batchId: string
  completedAt: number
}

/** Where a page of a tenant's runs ended: the last run's recency and id. */
export interface RunCursor { at: number, runId: string }

/** One page of a tenant's runs, most recently used first; `next` is where the next page starts, null on the last. */
export interface RunPage { runs: RunRecord[], next: RunCursor | null }

export interface StoredReceipt { receipt: Receipt, tenant: string }

export type UpdateResult<T> = { found: false } | { found: true, value: T }

/**
 * A run's entry for one batch id, lent to `updateRunWithBatchId`'s function:
 * the hash of the calls the run first got that id with, for idempotent
 * resubmission.
 */
export interface BatchIdEntry {
  readonly batchId: string
  /** Undefined when the run never got this batch id. */
  get requestHash (): string | undefined
  /** Recording the batch id with its hash is stored with the function's changes to the run, or not at all. */
  set requestHash (hash: string)
}

/** Why a run's batch in flight is cancelled through the store (on whichever replica runs it). */
export type CancelReason = 'cancelled' | 'ended'

/** Hears cancellations published by any replica sharing the store, this one included. */
export type CancelListener = (runId: string, reason: CancelReason) => void

/**
 * Where run state, batch records and receipts live. Every method is
 * asynchronous so that a shared store (Redis) can implement it; `updateRun`
 * is atomic per run.
 */
export interface Store {
  /** Stores a new run; false when the id exists already. May evict per the store's bounds. */
  createRun (run: RunRecord): Promise<boolean>
  /** The run, or undefined once it is gone or expired. Treat the result as read-only. */
  getRun (runId: string): Promise<RunRecord | undefined>
  /**
   * Runs `fn` on the current record atomically: no other update of the same
   * run interleaves. `fn` is synchronous, mutates the record in place and must
   * decide before it mutates (a throw leaves the record unchanged). Marks the
   * run used now (its idle timer restarts).
   */
  updateRun<T> (runId: string, fn: (run: RunRecord) => T): Promise<UpdateResult<T>>
  /**
   * `updateRun`, with the run's entry for one batch id beside the record:
   * whether the run knows that id is read, and its recording written, in the
   * same atomic step as the record. Only that one entry is read or written,
   * however many batch ids the run holds. Batch ids live as long as the
   * run's batch records and are freed with them.
   */
  updateRunWithBatchId<T> (runId: string, batchId: string, fn: (run: RunRecord, entry: BatchIdEntry) => T): Promise<UpdateResult<T>>
  /**
   * Ends the run (state `ended`) and frees its state: repeat streak, batch
   * ids and batch records. The small record stays, answering `ended`, until
   * it expires or is evicted; its receipts stay for the retention time.
   * Undefined when absent.
   */
  endRun (runId: string, at: number): Promise<RunRecord | undefined>

  getBatch (runId: string, batchId: string): Promise<BatchRecord | undefined>
  /** The run's finished batches (their stored answers summarized), in no particular order. */
  listBatches (runId: string): Promise<BatchEntry[]>
  /**
   * A page of at most `limit` of the tenant's runs that are held (ended ones
   * included), most recently used first, after `after` when given. A run
   * used while pages are read moves to the front: a page may then repeat or
   * miss it, never another run.
   */
  listRuns (tenant: string, limit: number, after?: RunCursor): Promise<RunPage>
  /**
   * Stores a finished batch's answer and, in the same atomic step, releases
   * the run's lease, so a resend finds the lease or the answer, never
   * neither: only while that batch on that replica (`owner`) holds the lease.
   * A batch whose lease another replica took over (it was paused, or could
   * not renew) stores nothing, so the answer of the replica that took over
   * stays the one resends get. Answers whether it stored; nothing happens
   * when the run is gone. Marks the run used now.
   *
   * Given a function instead of a record, the function runs on the run in
   * that same atomic step, as `updateRun`'s does (synchronous, may mutate the
   * record, decides before it mutates; its changes are kept whether or not
   * the lease is held), and answers the record to store: a batch's last
   * changes to its run, its answer and the release are then one write.
   */
  completeBatch (runId: string, owner: string, record: BatchRecord | ((run: RunRecord) => BatchRecord)): Promise<boolean>

  /**
   * Stores a receipt unless one with the same operationId exists (the first
   * writer wins); answers the stored one, which is `receipt` itself when this
   * call stored it. A new operation enters its run's journal here. With
   * `pending`, the receipt is stored as the pending receipt of the dispatch
   * that token names (the token is kept beside the receipt, never in it):
   * `settleReceipt` with the same token may replace it.
   */
  putReceipt (receipt: Receipt, tenant: string, pending?: string): Promise<Receipt>
  /**
   * Replaces the pending receipt stored under `pending` with the operation's
   * final receipt (`tenant` as given to putReceipt), in place: the same
   * journal entry and expiry, no token any more. Only while the stored
   * receipt is still that pending one: a final receipt, another dispatch's
   * pending receipt or a missing one is left as it is. Answers whether it
   * replaced it.
   */
  settleReceipt (receipt: Receipt, tenant: string, pending: string): Promise<boolean>
  /** A receipt with the tenant of its run, which alone may read it. */
  getReceipt (operationId: string): Promise<StoredReceipt | undefined>
  listReceipts (runId: string): Promise<Receipt[]>

  /**
   * Rewrites a stored receipt atomically: `fn` gets the current receipt and
   * answers its replacement, or undefined to leave it. The replacement keeps
   * the journal entry and expiry; a pending dispatch's token is dropped (a
   * late answer of that dispatch no longer settles it). Answers what is
   * stored after, or undefined when there is no such receipt.
   */
  reviseReceipt (operationId: string, fn: (receipt: Receipt) => Receipt | undefined): Promise<Receipt | undefined>

  /**
   * Notes which run unresolved uncertain writes belong to, so an operation id
   * alone finds its run (and the gauge counts them). Kept about as long as
   * the run is; noting them again pushes that on.
   */
  indexUncertain (runId: string, operationIds: readonly string[]): Promise<void>
  /** Forgets an operation noted by indexUncertain (it was resolved). */
  unindexUncertain (operationId: string): Promise<void>
  /** The run an operation noted by indexUncertain belongs to. */
  runOfUncertain (operationId: string): Promise<string | undefined>
  /** Unresolved uncertain writes of the runs held. */
  countUncertain (): Promise<number>

  /**
   * Takes a short lock named `name` for `owner`, unless another owner holds
   * it; it lapses after `ttlMs` if never released. Answers whether it was taken.
   */
  tryLock (name: string, owner: string, ttlMs: number): Promise<boolean>
  /** Releases a lock, only if `owner` holds it. */
  unlock (name: string, owner: string): Promise<void>

  /**
   * Runs whose record holds a waiting batch (`RunRecord.waiting`, src/approvals),
   * of every tenant: for the approvals inbox and the expiry sweep. Kept in
   * step with the records by every update, atomically.
   */
  waitingRuns (): Promise<RunRecord[]>

  /** Every run currently held, for the aggregate summary and gauges. */
  countRuns (): Promise<{ total: number, active: number, inFlight: number }>

  /**
   * Asks every replica sharing this store to cancel the run's batch in flight.
   * This process's listeners hear it before the promise settles; other
   * replicas hear it at most once, soon after (a replica cut off from the
   * store at that moment misses it, so the run's state must say it too).
   */
  publishCancel (runId: string, reason: CancelReason): Promise<void>
  /** Subscribes to every replica's cancellations; answers the unsubscribe function. */
  onCancel (listener: CancelListener): () => void

  /** True when the store can take work (a shared store is reachable). */
  ready (): Promise<boolean>
  close (): Promise<void>
}

/** Every run held has a batch in flight: nothing can be evicted for a new one. */
export class StoreFullError extends Error {
  constructor () {
    super('The run store is full and every run in it has a batch in flight')
    this.name = 'StoreFullError'
  }
}

/**
 * A shared store could not be reached or refused the command (connection
 * lost, timeout, out of memory, too much contention on one run). A command
 * that timed out may still have been applied. `statusCode` 503 makes the HTTP
 * error handler answer the `overloaded` problem; the client may retry.
 */
export class StoreUnavailableError extends Error {
  readonly code = 'TOOLGATE_STORE_UNAVAILABLE'
  readonly statusCode = 503
  readonly retryable = true
  constructor (message: string) {
    super(message)
    this.name = 'StoreUnavailableError'
  }
}

/** A stored batch's list entry: its own summary, else read from its answer (parsed once, for answers stored without one). */
export function batchEntry (record: BatchRecord): BatchEntry {
  const summary = record.summary ?? summarizeAnswer(record.responseJson)
  return { batchId: record.batchId, completedAt: record.completedAt, turn: summary.turn, calls: summary.calls, statuses: { ...summary.statuses } }
}

function summarizeAnswer (responseJson: string): BatchSummary {
  const answer = JSON.parse(responseJson) as { turn?: number, results?: Array<{ status?: string }> }
  const results = answer.results ?? []
  const statuses: Record<string, number> = {}
  for (const r of results) if (typeof r.status === 'string') statuses[r.status] = (statuses[r.status] ?? 0) + 1
  return { turn: answer.turn ?? 0, calls: results.length, statuses }
}

/** Whether the run's lease is this batch's, taken by this replica. */
export function holds (run: RunRecord, owner: string, batchId: string): boolean {
  return run.inFlight !== null && run.inFlight.batchId === batchId && run.inFlight.owner === owner
}

/** What ending a run does to its record, in every store: state `ended`, streaks freed (each store frees the batch ids and records). */
export function markEnded (run: RunRecord, at: number): RunRecord {
  run.state = 'ended'
  run.terminationReason = 'ended'
  run.repeat = resetRepeats()
  delete run.loops
  run.admitted = null
  // A batch waiting for approvals goes with the run's other batches; no replica holds its lease.
  if (run.waiting != null) run.waiting = null
  if (run.inFlight?.owner === WAITING_OWNER) run.inFlight = null
  run.lastActiveAt = at
  return run
}
