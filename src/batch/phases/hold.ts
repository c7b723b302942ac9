/**
 * The hold phase (SPEC section 13): once every call is prepared, a batch
 * with a prepared call of a tool that requires approval is not run. Its
 * state is stored as the run's waiting batch, atomically with the run (the
 * lease passed to no replica), and answered 202; whichever request or
 * replica decides its last call loads it from there and runs it on from
 * the admit phase (`BatchEngine.takeUpWaiting`).
 */
import { performance } from 'node:perf_hooks'
import { awaitingResponse } from '../../approvals/hold.js'
import { announceHeld, heldIndexes, markBlockedRetries, toWaiting } from '../../approvals/waiting.js'
import type { ApprovalSettings } from '../../approvals/types.js'
import { round } from '../../events/recorder.js'
import { ProblemError } from '../../errors.js'
import type { PreparationOutcome } from '../../model/call.js'
import { hold as holdRun } from '../../runs/transitions.js'
import type { RunRecord } from '../../model/run.js'
import { TenantWaitingQuotaError } from '../../store/types.js'
import type { BatchAnswer, EngineDeps } from '../engine-types.js'
import type { BatchRuntime } from '../runtime.js'
import type { BatchState, Prepared } from '../state.js'

/** Whether the batch has a call to hold: approvals are on, and a prepared call's tool requires one. */
export function mayHold (deps: EngineDeps, outcomes: readonly PreparationOutcome[]): boolean {
  return deps.approvals !== undefined && heldIndexes(outcomes).length > 0
}

/**
 * The hold phase: null when nothing is held (no call to approve, the batch
 * stopped), or when the run left `active` or the lease was lost meanwhile:
 * the batch then goes on as any batch does. Answers a promise only when it
 * stores the batch.
 */
export function hold (state: BatchState, rt: BatchRuntime, prepared: Prepared): Promise<BatchAnswer | null> | null {
  const settings = rt.deps.approvals
  if (settings === undefined || rt.controller.aborted || heldIndexes(prepared.outcomes).length === 0) return null
  return store(state, rt, prepared, settings)
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

/** Stores the batch as its run's waiting batch and answers the 202. */
async function store (state: BatchState, rt: BatchRuntime, prepared: Prepared, settings: ApprovalSettings): Promise<BatchAnswer | null> {
  const { deps } = rt
  const { outcomes } = prepared
  const waiting = toWaiting({
    batchId: state.batchId,
    requestHash: state.identified.requestHash,
    turn: state.turn,
    scopes: state.scopes,
    format: state.format,
    now: deps.clock.now(),
    ttlMs: settings.ttlMs,
    outcomes,
    events: [...rt.recorder.events],
    calls: state.calls
  })
  const announced = announceHeld(waiting)
  let uncertain: RunRecord['uncertain']
  const stored = await deps.store.updateRun(state.runId, (r) => {
    markBlockedRetries(waiting, r.uncertain, outcomes, prepared.fingerprints)
    uncertain = r.uncertain
    return holdRun(r, waiting, deps.replicaId, settings.graceMs)
  }).catch(refuseOverQuota)
  if (!stored.found || !stored.value) return null
  for (const e of announced) rt.onEvent?.(e)
  const durationMs = performance.now() - rt.startedAt
  rt.observer.batchCompleted('awaiting_approval', durationMs)
  const body = awaitingResponse(state.runId, waiting, { state: 'active', terminationReason: null, uncertain })
  return {
    body: JSON.stringify(body),
    replayed: false,
    status: 202,
    log: { runId: state.runId, batchId: state.batchId, turn: state.turn, calls: outcomes.length, outcome: 'awaiting_approval', held: body.approvals.length, durationMs: round(durationMs) }
  }
}
