/**
 * The hold phase of a batch (SPEC section 13): once every call is prepared,
 * a batch with a prepared call that requires approval is not run; it is
 * kept in its run's record, atomically with the run, and answered 202.
 */
import { performance } from 'node:perf_hooks'
import type { BatchAnswer, BatchRequest, EngineDeps } from '../batch/engine-types.js'
import { rejectedResult } from '../batch/results.js'
import type { BatchEvent, CallResult } from '../batch/types.js'
import { round } from '../events/recorder.js'
import type { PreparationOutcome } from '../prepare/types.js'
import type { RunRecord } from '../runs/types.js'
import { hold } from '../runs/transitions.js'
import type { ObserverList } from '../telemetry/types.js'
import type { Tool } from '../tools/types.js'
import type { PendingApproval, WaitingBatch } from './types.js'
import { announceHeld, heldIndexes, pendingApprovals, toWaiting } from './waiting.js'

export interface HoldContext {
  deps: EngineDeps
  req: BatchRequest
  turn: number
  requestHash: string
  /** The batch's host-visible events so far. */
  events: readonly BatchEvent[]
  observer: ObserverList
  startedAt: number
}

/** The answer to a batch while it waits: section 4's answer with `state`, the rejections and the pending approvals. */
export interface AwaitingResponse {
  runId: string
  batchId: string
  turn: number
  state: 'awaiting_approval'
  results: CallResult[]
  approvals: PendingApproval[]
  events: BatchEvent[]
  policyMessages: []
  continue: true
  run: { state: string, terminationReason?: string }
}

/**
 * Holds the batch when a prepared call of it requires approval: stores it
 * as the run's waiting batch, with the run's lease passed to no replica, and
 * answers 202. Null when nothing is held, or when the run left `active` or
 * the lease was lost meanwhile: the batch then goes on as any batch does.
 */
export async function holdBatch (ctx: HoldContext, outcomes: readonly PreparationOutcome[]): Promise<BatchAnswer | null> {
  const { deps, req } = ctx
  const settings = deps.approvals
  if (settings === undefined || heldIndexes(outcomes).length === 0) return null
  const waiting = toWaiting({
    batchId: req.batchId,
    requestHash: ctx.requestHash,
    turn: ctx.turn,
    scopes: req.scopes,
    format: req.format,
    now: settings.now(),
    ttlMs: settings.ttlMs,
    outcomes,
    events: [...ctx.events]
  })
  const announced = announceHeld(waiting)
  const stored = await deps.store.updateRun(req.runId, (r) => hold(r, waiting, deps.replicaId, settings.graceMs))
  if (!stored.found || !stored.value) return null
  for (const e of announced) req.onEvent?.(e)
  const durationMs = performance.now() - ctx.startedAt
  ctx.observer.batchCompleted('awaiting_approval', durationMs)
  const body = awaitingResponse(req.runId, waiting, { state: 'active', terminationReason: null })
  return {
    body: JSON.stringify(body),
    replayed: false,
    status: 202,
    log: { runId: req.runId, batchId: req.batchId, turn: ctx.turn, calls: outcomes.length, outcome: 'awaiting_approval', held: body.approvals.length, durationMs: round(durationMs) }
  }
}

/** A run's batch `batchId` as it stands while it waits for approvals; undefined when it does not wait. */
export function awaitingView (run: RunRecord, batchId: string): AwaitingResponse | undefined {
  const w = run.waiting
  return w?.batchId === batchId && w.phase === 'awaiting' ? awaitingResponse(run.runId, w, run) : undefined
}

/** The answer of a waiting batch as it stands: the batch request's 202, a resend's, the batch resource's. */
export function awaitingResponse (runId: string, w: WaitingBatch, run: Pick<RunRecord, 'state' | 'terminationReason'>): AwaitingResponse {
  const results: CallResult[] = []
  w.outcomes.forEach((o, index) => {
    if (o.ok) return
    const { id, name: requestedName } = w.calls[index]!
    // Only the name of the tool shows in a rejection's result.
    const tool = o.tool === null ? null : { name: o.tool } as Tool
    results.push(rejectedResult({ id, requestedName, tool, reason: o.reason, message: o.message }))
  })
  return {
    runId,
    batchId: w.batchId,
    turn: w.turn,
    state: 'awaiting_approval',
    results,
    approvals: pendingApprovals(w),
    events: w.events,
    policyMessages: [],
    continue: true,
    run: run.terminationReason === null ? { state: run.state } : { state: run.state, terminationReason: run.terminationReason }
  }
}
