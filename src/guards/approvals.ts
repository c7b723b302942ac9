/**
 * Approvals (SPEC section 13) as one guard. Before the run is read: a
 * prepared call of a tool that requires approval is screened `hold`, and
 * the hold phase has this guard store the batch's state, those calls held,
 * as its run's waiting batch, atomically with the run (the lease passed to
 * no replica), for a 202.
 * Whichever request or replica decides its last call takes it up
 * (`BatchEngine.takeUpWaiting`): at its admission a denied call is settled
 * `denied`, and as it closes each decision is recorded in its call's
 * result and counted. Its slice of the run: `waiting`.
 */
import type { Clock } from '../clock.js'
import { ProblemError } from '../errors.js'
import { cancelledResult, deniedResult } from '../model/results.js'
import type { RunRecord, RunStats } from '../model/run.js'
import { type Store, TenantWaitingQuotaError } from '../store/types.js'
import type { WaitingBatch } from '../model/waiting.js'
import type { ApprovalSettings } from '../approvals/types.js'
import { announceHeld, heldIndexes, holdApprovals, markBlockedRetries, pendingCount, recordDecisions } from '../approvals/waiting.js'
import { hold as holdRun } from '../runs/transitions.js'
import type { AdmissionScope, BatchGuard, ClosingBatch, Guard, GuardedBatch, GuardRuntime, Held, StoreState, Verdict } from './types.js'

const NAME = 'approvals'

/** What holding a batch reads and writes. */
export interface ApprovalsDeps {
  settings: ApprovalSettings | undefined
  store: Pick<Store, 'updateRun' | 'waitingRuns'>
  clock: Clock
  /** Identifies this process in a run's lease. */
  replicaId: string
}

class ApprovalsGuard implements BatchGuard {
  readonly #batch: GuardedBatch
  readonly #deps: ApprovalsDeps
  readonly #settings: ApprovalSettings

  constructor (batch: GuardedBatch, deps: ApprovalsDeps, settings: ApprovalSettings) {
    this.#batch = batch
    this.#deps = deps
    this.#settings = settings
  }

  screen (verdicts: Verdict[]): void {
    for (const i of heldIndexes(this.#batch.outcomes)) if (verdicts[i]?.kind === 'go') verdicts[i] = { kind: 'hold', by: NAME }
  }

  /**
   * Stores the batch's state, its calls held, as its run's waiting batch;
   * null when the run left `active` or the lease was lost meanwhile: the
   * batch then goes on as any batch does.
   */
  async hold (rt: GuardRuntime, stored: StoreState): Promise<Held | null> {
    const { store, clock, replicaId } = this.#deps
    const batch = this.#batch
    const now = clock.now()
    const waiting: WaitingBatch = {
      phase: 'awaiting',
      requestHash: batch.requestHash,
      requestedAt: now,
      expiresAt: now + this.#settings.ttlMs,
      state: stored(holdApprovals(batch.outcomes, rt.events))
    }
    const announced = announceHeld(waiting)
    let uncertain: RunRecord['uncertain']
    const held = await store.updateRun(batch.runId, (r) => {
      markBlockedRetries(waiting.state.approvals, r.uncertain, batch.outcomes, batch.fingerprints)
      uncertain = r.uncertain
      return holdRun(r, waiting, replicaId, this.#settings.graceMs)
    }).catch(refuseOverQuota)
    if (!held.found || !held.value) return null
    for (const e of announced) rt.onEvent?.(e)
    return { waiting, run: { state: 'active', terminationReason: null, uncertain }, held: pendingCount(waiting.state) }
  }
}

/**
 * A tenant's waiting batches pin their runs: past its quota the batch is
 * refused (429, its lease released, nothing of it run), so one tenant
 * cannot pin the store full for the others (SPEC section 19). The store
 * checks and counts the quota in the update that holds the batch, so
 * batches racing on several replicas cannot pass it together.
 */
function refuseOverQuota (err: unknown): never {
  if (err instanceof TenantWaitingQuotaError) {
    throw new ProblemError('quota_exceeded', `This tenant has ${err.max} batches waiting for approvals, its quota (TOOLGATE_MAX_WAITING_BATCHES_PER_TENANT); decide some first.`)
  }
  throw err
}

/** A batch taken up after it waited: the decisions on its held calls. */
class DecidedGuard implements BatchGuard {
  readonly #batch: GuardedBatch
  readonly #decisions: NonNullable<GuardedBatch['decisions']>

  constructor (batch: GuardedBatch, decisions: NonNullable<GuardedBatch['decisions']>) {
    this.#batch = batch
    this.#decisions = decisions
  }

  admit (scope: AdmissionScope): void {
    this.#decisions.forEach((d, i) => {
      const o = this.#batch.outcomes[i]
      if (d?.approve !== false || o?.ok !== true) return
      // A call its caller withdrew before anyone decided is cancelled, not denied.
      scope.verdict(i, { kind: 'settle', result: d.withdrawn === true ? cancelledResult(o, 'cancelled') : deniedResult(o, d), by: NAME })
    })
  }

  beforeClose (closing: ClosingBatch, rt: { stats: RunStats }): void {
    recordDecisions(closing.results, this.#decisions, rt.stats)
  }
}

const NOTHING: BatchGuard = {}

/** The guard; with no settings (approvals off), nothing is held. */
export function approvalsGuard (deps: ApprovalsDeps): Guard {
  return {
    name: NAME,
    open: (batch) => {
      if (batch.decisions !== undefined) return new DecidedGuard(batch, batch.decisions)
      if (deps.settings === undefined || heldIndexes(batch.outcomes).length === 0) return NOTHING
      return new ApprovalsGuard(batch, deps, deps.settings)
    }
  }
}
