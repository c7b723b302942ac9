/**
 * Write-ahead records (SPEC section 17) as one guard. Before an epoch's
 * writes are sent, one store round trip records them as about to be sent
 * (src/store/write-ahead.ts), under the batch's lease; a write whose record
 * could not be stored is not sent. The stored answer of the batch answers
 * them (the store's completeBatch). A replica that takes over a run whose
 * lease lapsed (src/batch/engine.ts) turns the recorded, unanswered ones
 * into unresolved uncertainties (cause `replica_lost`): when their batch is
 * resent, this guard answers those very calls `uncertain` at admission and
 * sends them nowhere; a model's retry under a new call id is retry safety's
 * to block (src/guards/retry-safety.ts).
 */
import { errorContent } from '../model/content.js'
import type { CallResult } from '../model/result.js'
import { callResult } from '../model/results.js'
import type { Uncertainty } from '../model/uncertainty.js'
import { type RunIdentity, identityOf } from '../model/incarnation.js'
import { operationId } from '../receipts/operation-id.js'
import type { PendingWrite, Store } from '../store/types.js'
import type { AdmissionScope, Admitted, BatchGuard, Guard, GuardedBatch, GuardRuntime, Passage, Refusal, Sending, Verdict } from './types.js'

const NAME = 'write_ahead'

/** What the model reads of a write its replica was lost with. */
export const REPLICA_LOST_MESSAGE =
  'The outcome of this call is unknown: it was being sent when the toolgate replica sending it stopped, so it may or may not have taken effect. ' +
  'It will not be sent again; check the current state before trying it again.'

/** What the guard is built with. */
export interface WriteAheadDeps {
  store: Pick<Store, 'recordWrites'>
  /** This replica, as the lease's owner. */
  replicaId: string
}

class WriteAheadGuard implements BatchGuard {
  readonly #batch: GuardedBatch
  readonly #deps: WriteAheadDeps
  #run: RunIdentity | null = null
  #verdicts: readonly Verdict[] = []
  #stats: GuardRuntime['stats'] | null = null
  /** By call index: a write whose record could not be stored, answered without being sent. */
  readonly #refused = new Map<number, Refusal>()

  constructor (batch: GuardedBatch, deps: WriteAheadDeps) {
    this.#batch = batch
    this.#deps = deps
  }

  admit (scope: AdmissionScope): void {
    const { run } = scope
    this.#run = identityOf(run)
    const lost = new Map<string, Uncertainty>()
    for (const u of run.uncertain ?? []) if (u.cause === 'replica_lost' && u.batchId === this.#batch.batchId) lost.set(u.callId, u)
    if (lost.size === 0) return
    const { outcomes, fingerprints } = this.#batch
    for (const [i, o] of outcomes.entries()) {
      // The very same call of the batch, its record found unanswered: an action replays its pending receipt instead.
      const u = o.ok && !o.tool.readOnly && o.tool.action === null ? lost.get(o.id) : undefined
      if (u !== undefined && u.fingerprint === fingerprints[i]) scope.verdict(i, { kind: 'settle', result: lostResult(o, u), by: NAME })
    }
  }

  begin (rt: GuardRuntime, admitted: Admitted): void {
    this.#verdicts = admitted.verdicts
    this.#stats = rt.stats
  }

  report (_index: number, verdict: Verdict): void {
    if (verdict.kind === 'settle' && verdict.by === NAME && this.#stats !== null) this.#stats.uncertainWrites++
  }

  /** One store round trip for the epoch's writes; an epoch of reads waits on nothing. */
  beforeEpoch (_epoch: number, indexes: readonly number[]): Promise<void> | undefined {
    const run = this.#run
    if (run === null) return undefined
    const { outcomes, fingerprints, batchId } = this.#batch
    const writes: PendingWrite[] = []
    const sent: number[] = []
    for (const i of indexes) {
      const o = outcomes[i]
      const fingerprint = fingerprints[i]
      if (o === undefined || !o.ok || o.tool.readOnly || fingerprint === undefined) continue
      const verdict = this.#verdicts[i]
      writes.push({
        operationId: verdict?.kind === 'as' ? verdict.operationId : operationId(run, o.id, fingerprint),
        fingerprint, conflictKey: o.conflictKey, callId: o.id, tool: o.tool.name, batchId, action: o.tool.action !== null
      })
      sent.push(i)
    }
    if (writes.length === 0) return undefined
    return this.#record(run, writes, sent)
  }

  async #record (run: RunIdentity, writes: PendingWrite[], sent: number[]): Promise<void> {
    let recorded: boolean
    try {
      recorded = await this.#deps.store.recordWrites(run, { owner: this.#deps.replicaId, batchId: this.#batch.leaseId }, writes)
    } catch {
      for (const [k, i] of sent.entries()) this.#refused.set(i, { kind: 'refused', status: 'error', content: errorContent('store_unavailable', NOT_RECORDED_MESSAGE), details: { cause: 'store_unavailable', operationId: writes[k]!.operationId } })
      return
    }
    if (!recorded) for (const i of sent) this.#refused.set(i, { kind: 'refused', status: 'error', content: errorContent('cancelled', LEASE_LOST_MESSAGE), details: { reason: 'lease_lost' }, stop: 'lease_lost' })
  }

  /** A write whose record could not be stored is answered instead of sent. */
  acquire (sending: Sending): Passage {
    return this.#refused.get(sending.index)
  }
}

const LEASE_LOST_MESSAGE = 'Not run: another toolgate replica took this run over before the call could be sent. It had no effect.'

const NOT_RECORDED_MESSAGE = 'Not run: toolgate could not record this write before sending it, so it was not sent. It had no effect.'

/** A write of a resent batch whose replica was lost while sending it: `uncertain`, not sent again. */
function lostResult (call: Parameters<typeof callResult>[0], u: Uncertainty): CallResult {
  return callResult(call, 'uncertain', errorContent('outcome_unknown', REPLICA_LOST_MESSAGE), { cause: 'replica_lost', operationId: u.operationId }, true)
}

/** A batch with no write has nothing to record, answer or count: it opens a guard with no hooks. */
const NOTHING: BatchGuard = Object.freeze({})

/** Whether a batch has a write this guard records (or answers, when its replica was lost). */
function hasWrite (batch: GuardedBatch): boolean {
  for (const o of batch.outcomes) if (o.ok && !o.tool.readOnly) return true
  return false
}

/** The guard. */
export function writeAheadGuard (deps: WriteAheadDeps): Guard {
  return { name: NAME, open: (batch) => hasWrite(batch) ? new WriteAheadGuard(batch, deps) : NOTHING }
}
