/**
 * Retry safety across turns (SPEC section 14) as one guard. At admission,
 * inside the run's atomic update: a write that retries one of the run's
 * unresolved uncertain writes is settled `blocked`, unless its tool is
 * idempotent: then it is dispatched under the original operation id. As the
 * batch closes: what it adds and resolves is indexed before, recorded in,
 * and followed up after the final update. Its slice of the run: `uncertain`.
 */
import type { Clock } from '../clock.js'
import { uncertainBlockedResult } from '../model/results.js'
import type { RunRecord, RunStats } from '../model/run.js'
import { type AppliedChange, type HeldBack, type UncertainChange, batchChange, blockers, recordChange, weighCalls } from '../uncertain/batch.js'
import type { UncertainWrites } from '../uncertain/service.js'
import type { AdmissionScope, BatchGuard, ClosingBatch, Guard, GuardedBatch, GuardRuntime, Verdict } from './types.js'

const NAME = 'retry_safety'

class RetryGuard implements BatchGuard {
  readonly #batch: GuardedBatch
  readonly #service: UncertainWrites | undefined
  readonly #clock: Clock
  /** By call index: how each call stands against the run's uncertain writes, as admission found it. */
  #held: Array<HeldBack | undefined> = []
  #change: UncertainChange | null = null
  #applied: AppliedChange | null = null
  #stats: RunStats | null = null
  /** The run's creation time, read at admission: its incarnation, kept with the tenant's list of its uncertain writes. */
  #createdAt: number | null = null

  constructor (batch: GuardedBatch, service: UncertainWrites | undefined, clock: Clock) {
    this.#batch = batch
    this.#service = service
    this.#clock = clock
  }

  admit (scope: AdmissionScope): void {
    this.#createdAt = scope.run.createdAt
    const held = this.#held = weighCalls(scope.run.uncertain, this.#batch.outcomes, this.#batch.fingerprints)
    held.forEach((h, i) => {
      const o = this.#batch.outcomes[i]
      if (h === undefined || o === undefined) return
      scope.verdict(i, h.kind === 'retry' ? { kind: 'as', operationId: h.of.operationId, by: NAME } : { kind: 'settle', result: uncertainBlockedResult(o, h.by), by: NAME })
    })
  }

  begin (rt: GuardRuntime): void {
    this.#stats = rt.stats
  }

  report (_index: number, verdict: Verdict): void {
    // Counted when it was this guard's verdict that settled the call.
    if (verdict.kind === 'settle' && verdict.by === NAME && this.#stats !== null) this.#stats.blockedCalls++
  }

  /** The batch's new uncertain writes are indexed before its final update records them; a batch with none waits on nothing. */
  beforeClose (closing: ClosingBatch): Promise<void> | undefined {
    const change = this.#change = batchChange(this.#batch.batchId, closing.results, closing.dispatched, closing.operations, this.#held, this.#batch.fingerprints, this.#clock.now())
    if (change.added.length === 0) return undefined
    const { runId, tenant } = this.#batch
    return this.#service?.noteAdded(runId, change, tenant, this.#createdAt ?? undefined)
  }

  close (r: RunRecord): void {
    if (this.#change !== null) this.#applied = recordChange(r, this.#change)
  }

  closed (): void {
    if (this.#change !== null && this.#applied !== null) this.#service?.afterBatch(this.#batch.runId, this.#change, this.#applied, blockers(this.#held), this.#batch.tenant)
  }
}

/** The guard, with the service that indexes and recovers uncertain writes when there is one. */
export function retrySafetyGuard (service: UncertainWrites | undefined, clock: Clock): Guard {
  return { name: NAME, open: (batch) => new RetryGuard(batch, service, clock) }
}
