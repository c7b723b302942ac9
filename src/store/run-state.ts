import type { Incarnation } from '../model/incarnation.js'
import type { RunRecord } from '../model/run.js'
import type { BatchIdEntry, BatchRecord, RunCursor, RunPage, SharedCompletion, UpdateResult } from './records.js'

/**
 * Run records with their leases, batch ids and waiting batches: the state a
 * batch takes its lease on. Every method is asynchronous so that a shared
 * store (Redis) can implement it; updates are atomic per run.
 *
 * Three operations reach beyond the record, because a batch would pay a
 * round trip more if they did not: `updateRunWithBatchId` records a batch id
 * in the same atomic step as the run (the lease-taking update),
 * `completeBatch` stores a batch's answer (read back through `BatchAnswers`)
 * as it releases the lease, and `recordBatch` records the id and answer of a
 * batch that never held the lease in one step. So the batch answers a
 * deployment uses come from the same store as its run state. Ending,
 * expiring or evicting a run frees its batch ids and answers with it.
 */
export interface RunStateStore {
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
   * Ends the run (state `ended`) and frees its batch ids and batch records;
   * `end` runs on the ended record in the same atomic step (the run-level
   * rules free their slices of it: streaks, loop state). The small record
   * stays, answering `ended`, until it expires or is evicted; its receipts
   * stay for the retention time. Undefined when absent.
   */
  endRun (runId: string, at: number, end?: (run: RunRecord) => void): Promise<RunRecord | undefined>
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
   *
   * With `incarnation`, the run the batch ran in: when the run held under
   * the id now is another incarnation (SPEC section 19), nothing is stored
   * or changed (the function is not run on that run's record); answers false.
   *
   * With `shared`, the batch ran under a lease several batches of the run
   * share (the MCP calls of a run that arrive together): the lease checked
   * is `shared.leaseId`'s, released only when `shared.release`; of the run's
   * write-ahead records only the batch's own (`shared.answeredWrites`, its
   * writes' operation ids) are answered, since the others' calls may still
   * be running.
   */
  completeBatch (runId: string, owner: string, record: BatchRecord | ((run: RunRecord) => BatchRecord), incarnation?: Incarnation, shared?: SharedCompletion): Promise<boolean>
  /**
   * Records a batch that never held the run's lease, its answer with it (an
   * MCP call cancelled before it started: a turn of its run all the same,
   * SPEC section 16). `fn` runs on the run in one atomic step, as
   * `updateRun`'s does, with the hash its batch id was recorded with
   * (undefined when the run never got that id), and answers the record to
   * store under that id, or undefined to store nothing (it then changed
   * nothing). The id is recorded with the record's hash, and the record
   * stored, in that same step; the lease, the waiting batch and the
   * write-ahead records are left as they are, whoever holds the run. Answers
   * whether it stored; nothing happens when the run is gone.
   */
  recordBatch (runId: string, batchId: string, fn: (run: RunRecord, recorded: string | undefined) => BatchRecord | undefined): Promise<boolean>
  /**
   * A page of at most `limit` of the tenant's runs that are held (ended ones
   * included), most recently used first, after `after` when given. A run
   * used while pages are read moves to the front: a page may then repeat or
   * miss it, never another run.
   */
  listRuns (tenant: string, limit: number, after?: RunCursor): Promise<RunPage>
  /**
   * Runs whose record holds a waiting batch (`RunRecord.waiting`, src/approvals),
   * of every tenant: for the approvals inbox and the expiry sweep. Kept in
   * step with the records by every update, atomically.
   */
  waitingRuns (): Promise<RunRecord[]>
  /** Every run currently held, for the aggregate summary and gauges. */
  countRuns (): Promise<{ total: number, active: number, inFlight: number }>
}
