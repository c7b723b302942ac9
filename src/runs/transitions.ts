/**
 * A run's transitions, in one place: the owner check every route and batch
 * makes, termination and cancellation, and the hold of a batch for
 * approvals with its resumption. Each runs inside the run's atomic update
 * (the owner check also on a record just read) and decides before it
 * changes anything, so a throw leaves the run as it was.
 */
import { hasPending, WAITING_OWNER, type WaitingBatch } from '../model/waiting.js'
import { ProblemError } from '../errors.js'
import { type LeaseTerms, holdsLease, takeLease } from './lease.js'
import type { RunRecord, TerminationReason } from '../model/run.js'

/**
 * The run, when `tenant` owns it; thrown `run_not_found` otherwise: another
 * tenant's run does not exist for them. Thrown, not returned, so that inside
 * an atomic update it leaves that run untouched (not even its idle timer).
 */
export function ownedRun (run: RunRecord | undefined, tenant: string, runId: string, createdAt?: number): RunRecord {
  if (run === undefined || run.tenant !== tenant || (createdAt !== undefined && run.createdAt !== createdAt)) throw runNotFound(runId)
  return run
}

/** The problem of a run that does not exist for the caller. */
export function runNotFound (runId: string): ProblemError {
  return new ProblemError('run_not_found', `No run ${runId}`)
}

/** Terminates an active run with `reason`; answers whether it did (a run that left `active` keeps its reason). */
export function terminate (run: RunRecord, reason: TerminationReason): boolean {
  if (run.state !== 'active') return false
  run.state = 'terminated'
  run.terminationReason = reason
  return true
}

/** Cancels an active run; a run already stopped is left as it is. */
export function cancel (run: RunRecord): void {
  if (run.state !== 'active') return
  run.state = 'cancelled'
  run.terminationReason = 'cancelled'
}

/**
 * Holds a batch for approvals: stores it as the run's waiting batch and
 * passes the lease to no replica, until a little after the approvals expire
 * (`graceMs`), so the run is neither evicted nor expired meanwhile. Only
 * while the run is active and this replica's batch holds the lease; answers
 * whether it held it.
 */
export function hold (run: RunRecord, waiting: WaitingBatch, replicaId: string, graceMs: number): boolean {
  if (run.state !== 'active' || !holdsLease(run, replicaId, waiting.state.batchId)) return false
  run.waiting = waiting
  run.inFlight = { batchId: waiting.state.batchId, owner: WAITING_OWNER, leaseExpiresAt: waiting.expiresAt + graceMs }
  return true
}

/**
 * Resumes a waiting batch once no held call is left pending, or once the
 * run is no longer active (its calls are then answered, not run): it runs
 * on this replica, which takes the lease. Answers whether it resumed.
 */
export function resume (run: RunRecord, w: WaitingBatch, terms: LeaseTerms, now: number): boolean {
  if (w.phase !== 'awaiting' || (hasPending(w) && run.state === 'active')) return false
  w.phase = 'running'
  takeLease(run, w.state.batchId, terms, now)
  return true
}

/**
 * The batch's answer is about to be stored: a batch that waited for
 * approvals leaves the record, and so does where its admission started
 * (`admitted`), which only a resume of the unanswered batch reads; once
 * answered, a resend replays the answer. Kept while another replica holds
 * the batch's lease: that one may still need it. Every update of the run
 * then moves a smaller record (on Redis, each is written whole).
 */
export function settleAnswered (run: RunRecord, batchId: string, owner: string): void {
  if (run.waiting?.state.batchId === batchId) run.waiting = null
  if (run.admitted?.batchId === batchId && holdsLease(run, owner, batchId)) run.admitted = null
}
