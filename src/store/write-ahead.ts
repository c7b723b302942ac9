import type { Uncertainty } from '../model/uncertainty.js'
import type { RunRecord } from '../model/run.js'
import type { RunIdentity } from '../model/incarnation.js'


/** A write recorded as about to be sent (SPEC section 17): what its uncertainty would be if its replica died. */
export interface PendingWrite {
  operationId: string
  /** The call's fingerprint (SPEC section 6): a model's retry has the same one. */
  fingerprint: string
  conflictKey: string | null
  callId: string
  tool: string
  batchId: string
  /** An action tool's: its pending receipt says the same. */
  action: boolean
}

/** The batch whose lease a write is recorded under. */
export interface LeaseHolder { owner: string, batchId: string }

/**
 * Write-ahead records (SPEC section 17): before a write is sent, the store
 * holds that it is about to be; a replica that takes over a run whose
 * lease lapsed turns what it finds recorded and unanswered into unresolved
 * uncertainties of the run (cause `replica_lost`), so neither a resend of
 * the batch nor a model's retry sends it again.
 *
 * Records are kept per tenant and run incarnation (`RunIdentity`): a run id
 * created again sees none of an earlier run's. They are answered, all at
 * once, by the store's `completeBatch` that stores the batch's answer (the
 * run state part deletes them in that same atomic step, so answering costs
 * no round trip of its own), and go with their run.
 */
export interface WriteAhead {
  /**
   * Records the writes of one epoch as about to be sent, in one round trip,
   * while `lease` holds the run's lease (that owner and batch, not lapsed).
   * Answers false, recording nothing, when it does not, or the run (that
   * incarnation) is gone: the caller then sends none of them.
   */
  recordWrites (run: RunIdentity, lease: LeaseHolder, writes: readonly PendingWrite[]): Promise<boolean>
  /** The run's writes recorded and not answered, in no particular order. */
  pendingWrites (run: RunIdentity): Promise<PendingWrite[]>
  /**
   * Takes over a run (that incarnation) no batch holds a valid lease of, in
   * one atomic step: each recorded unanswered write becomes an unresolved
   * uncertainty of the run record (`cause: "replica_lost"`, an operation
   * listed already is not added twice), noted as `indexUncertain` notes
   * them; the records are dropped; a lapsed lease is freed. Answers the
   * uncertainties it made (none when nothing was recorded), or undefined,
   * changing nothing, when the run is gone or a valid lease holds it.
   */
  takeOverWrites (run: RunIdentity): Promise<Uncertainty[] | undefined>
}

/** What a recorded write becomes when its replica is found lost: an unresolved uncertainty of its run. */
export function lostWrite (w: PendingWrite, since: number): Uncertainty {
  return {
    operationId: w.operationId, fingerprint: w.fingerprint, conflictKey: w.conflictKey, callId: w.callId, batchId: w.batchId, tool: w.tool, action: w.action, since, cause: 'replica_lost'
  }
}

/**
 * Inside the run's atomic step, for both stores: the take-over of a run no
 * valid lease holds. Undefined (nothing changed) when a valid lease holds
 * it; else frees a lapsed lease, adds the uncertainties of `writes` not
 * listed yet and answers them.
 */
export function takeOver (run: RunRecord, writes: readonly PendingWrite[], now: number): Uncertainty[] | undefined {
  if (run.inFlight !== null && run.inFlight.leaseExpiresAt > now) return undefined
  run.inFlight = null
  if (writes.length === 0) return []
  const listed = new Set((run.uncertain ?? []).map((u) => u.operationId))
  const made: Uncertainty[] = []
  for (const w of writes) {
    if (listed.has(w.operationId)) continue
    listed.add(w.operationId)
    made.push(lostWrite(w, now))
  }
  if (made.length > 0) run.uncertain = [...(run.uncertain ?? []), ...made]
  return made
}

