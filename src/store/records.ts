/**
 * The records the store contracts pass around, their errors, and the helpers
 * every implementation shares. Imports no contract, so each contract file
 * and each implementation can import it without a cycle.
 */
import type { Receipt } from '../model/receipt.js'
import type { RunRecord } from '../model/run.js'
import { type EarlierWaitingBatch, WAITING_OWNER, type WaitingBatch, currentWaiting } from '../model/waiting.js'

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

/** A receipt as the journal holds it: with the tenant of its run, which alone may read it. */
export interface StoredReceipt { receipt: Receipt, tenant: string }

/** What an update of a run answers: not found, or found with what its function returned. */
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

/** Every run held has a batch in flight: nothing can be evicted for a new one. */
export class StoreFullError extends Error {
  constructor () {
    super('The run store is full and every run in it has a batch in flight')
    this.name = 'StoreFullError'
  }
}

/** The run's tenant holds as many runs as it may (TOOLGATE_MAX_RUNS_PER_TENANT): nothing was stored. */
export class TenantRunsQuotaError extends Error {
  constructor (readonly max: number) {
    super(`The tenant holds ${max} runs, its quota`)
    this.name = 'TenantRunsQuotaError'
  }
}

/**
 * The run's tenant has as many batches waiting for approvals as it may
 * (TOOLGATE_MAX_WAITING_BATCHES_PER_TENANT): the update that would have made
 * this run wait one more was not written. Checked and counted in the run's
 * own atomic update, so replicas racing cannot pass the quota together.
 */
export class TenantWaitingQuotaError extends Error {
  constructor (readonly max: number) {
    super(`The tenant has ${max} batches waiting for approvals, its quota`)
    this.name = 'TenantWaitingQuotaError'
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

/** A batch completed under a lease its run's batches share (`RunStateStore.completeBatch`). */
export interface SharedCompletion {
  /** The shared lease's id, as the run's `inFlight.batchId` holds it. */
  leaseId: string
  /** Whether this batch is the last under it: the lease is released with its answer. */
  release: boolean
  /** The operation ids of the batch's writes: their write-ahead records are answered. */
  answeredWrites: readonly string[]
}

/** Whether the run's lease is this batch's, taken by this replica. */
export function holds (run: RunRecord, owner: string, batchId: string): boolean {
  return run.inFlight !== null && run.inFlight.batchId === batchId && run.inFlight.owner === owner
}

/**
 * What ending a run does to its record, in every store: state `ended`, its
 * last use now; the lease of a batch waiting for approvals goes with the
 * run's batches (no replica holds it), and so does the waiting batch. Each
 * run-level rule frees its own slice of the record in `end` (the guards'
 * reset, src/guards/), in the same atomic step; each store frees the batch
 * ids and records.
 */
export function markEnded (run: RunRecord, at: number, end?: (run: RunRecord) => void): RunRecord {
  run.state = 'ended'
  run.terminationReason = 'ended'
  run.admitted = null
  if (run.waiting != null) run.waiting = null
  if (run.inFlight?.owner === WAITING_OWNER) run.inFlight = null
  run.lastActiveAt = at
  end?.(run)
  return run
}

/**
 * A run as every store reads it: a batch held by an earlier version of
 * toolgate, before an upgrade, is read in this version's form (and written
 * in it by the run's next update).
 */
export function readWaiting (run: RunRecord): RunRecord {
  if (run.waiting != null) run.waiting = currentWaiting(run.waiting as WaitingBatch | EarlierWaitingBatch)
  return run
}
