/**
 * The answer phase: one result per call in source order, the batch's last
 * changes to its run (its termination, its figures, and each guard's
 * slice), its answer stored as its lease is released, and the response
 * rendered (src/batch/respond.ts).
 */
import { performance } from 'node:perf_hooks'
import { round } from '../../events/recorder.js'
import type { ClosingBatch } from '../../guards/types.js'
import { releaseWithAnswer } from '../../runs/lease.js'
import { addStats, emptyStats } from '../../runs/stats.js'
import { settleAnswered, terminate } from '../../runs/transitions.js'
import type { RunRecord, TerminationReason } from '../../model/run.js'
import { type BatchRecord, type Incarnation, type SharedCompletion, isIncarnation } from '../../store/types.js'
import type { BatchOutcome } from '../../telemetry/types.js'
import type { BatchAnswer } from '../engine-types.js'
import { type Closing, GONE, respond } from '../respond.js'
import { type BatchRuntime, watchGuards } from '../runtime.js'
import { type BatchState, PENDING, type Ready } from '../state.js'

/** The answer phase: records the batch, releases the lease and builds the response. */
export async function answer (state: BatchState, rt: BatchRuntime, ready: Ready): Promise<BatchAnswer> {
  const { guards } = ready
  // What settled after the last epoch (or with no epoch at all) is walked too.
  watchGuards(state, rt, guards)
  const { store } = rt.deps
  const { results, stats, closed } = state
  const signal = rt.controller
  const reason = signal.aborted ? String(signal.reason) : null
  const wallMs = performance.now() - rt.startedAt
  stats.wallTimeMs += wallMs
  for (const r of results) {
    if (r === PENDING) throw new Error('a call of the batch never settled')
    stats.callsByStatus[r.status] = (stats.callsByStatus[r.status] ?? 0) + 1
  }
  const closingBatch: ClosingBatch = { results, dispatched: state.dispatched, operations: state.operations }
  for (const g of guards) {
    const before = g.beforeClose?.(closingBatch, rt.view)
    if (before !== undefined) await before
  }

  // Terminal states this batch causes, unless the run already left `active`.
  const ending: TerminationReason | null = closed ? 'projection_failed' : state.stoppedBy ?? (reason === 'timeout' ? 'timeout' : null)
  const { observer, recorder } = rt
  let closing: Closing | undefined
  let responseJson = ''
  let stored: boolean
  // The run this batch ran in: a later run of the same id (SPEC section 19) gets none of its changes or its answer.
  const incarnation: Incarnation = { tenant: state.tenant, createdAt: state.createdAt }
  if (ending === null) {
    // Nothing this batch does ends the run, so no event depends on the run as stored: its last
    // changes to the run, its answer and the release of its lease are one atomic step.
    recorder.emit({ type: 'batch.completed', durationMs: round(wallMs) })
    stored = await completeShared(rt, state, (shared) => releaseWithAnswer(store, state.runId, rt.deps, (r) => {
      closing = close(state, rt, ready, r, null)
      responseJson = respond(state, rt, { closing })
      return batchRecord(state, responseJson, rt.deps.clock.now())
    }, incarnation, shared))
  } else {
    // The run's termination is an event of the answer, known only once the run is updated: two steps.
    const finalized = await store.updateRun(state.runId, (r) => isIncarnation(r, incarnation) ? close(state, rt, ready, r, ending) : undefined)
    if (finalized.found) closing = finalized.value
    if (closing?.terminatedNow === true) observer.runTerminated(ending)
    recorder.emit({ type: 'batch.completed', durationMs: round(wallMs) })
    responseJson = respond(state, rt, { closing: closing ?? GONE })
    const done = batchRecord(state, responseJson, rt.deps.clock.now())
    stored = await completeShared(rt, state, (shared) => releaseWithAnswer(store, state.runId, rt.deps, done, incarnation, shared))
  }
  if (closing === undefined) responseJson = respond(state, rt, { closing: GONE })
  const left = closing ?? GONE
  rt.deps.onStats?.(stats)
  // Cancelled: stopped before every call ran. A stop that came once every call had started (an MCP
  // client's cancel of a call under way, which settles on its own) leaves the batch completed.
  const outcome: BatchOutcome = closed ? 'closed' : left.state === 'terminated' ? 'terminated' : reason !== null && results.some((r) => r.status === 'cancelled') ? 'cancelled' : 'completed'
  observer.batchCompleted(outcome, wallMs)
  // Not stored: the lease passed to another replica, whose answer is the batch's answer once it has one.
  // Never a later incarnation's answer of the same batch id: that run is not this batch's.
  if (!stored) responseJson = (await answerOfSameRun(store, state, incarnation)) ?? responseJson
  if (closing !== undefined) for (const g of guards) g.closed?.()
  return {
    body: responseJson,
    replayed: false,
    log: { runId: state.runId, batchId: state.batchId, turn: state.turn, calls: results.length, outcome }
  }
}

/**
 * Stores the answer with `complete`: under a lease of its own, as it is;
 * under a shared one (MCP calls that arrive together), as the shared lease
 * decides, there and then, whether this answer releases it.
 */
function completeShared (rt: BatchRuntime, state: BatchState, complete: (shared: SharedCompletion | undefined) => Promise<boolean>): Promise<boolean> {
  const lease = rt.shared
  if (lease === undefined) return complete(undefined)
  const writes: string[] = []
  for (const [i, call] of state.dispatched.entries()) {
    const op = state.operations[i]
    if (call !== undefined && !call.tool.readOnly && op !== undefined) writes.push(op)
  }
  const shared = lease.completion(writes)
  const storing = complete(shared)
  if (shared.release) lease.releasing(storing.catch(() => false))
  return storing
}

/** The answer another replica stored for this batch, while the run held under its id is still the batch's run. */
async function answerOfSameRun (store: BatchRuntime['deps']['store'], state: BatchState, incarnation: Incarnation): Promise<string | undefined> {
  const run = await store.getRun(state.runId)
  if (run === undefined || !isIncarnation(run, incarnation)) return undefined
  return (await store.getBatch(state.runId, state.batchId))?.responseJson
}

/** Inside the run's atomic update: the batch's last changes to its run (termination, summaries, each guard's slice). */
function close (state: BatchState, rt: BatchRuntime, ready: Ready, r: RunRecord, ending: TerminationReason | null): Closing {
  const terminatedNow = ending !== null && terminate(r, ending)
  r.stats = addStats(r.stats ?? emptyStats(), state.stats)
  settleAnswered(r, state.batchId, rt.deps.replicaId)
  for (const g of ready.guards) g.close?.(r)
  return { state: r.state, terminationReason: r.terminationReason, terminatedNow }
}

/** What the store keeps of the finished batch, for resends and the run's batch list. */
export function batchRecord (state: BatchState, responseJson: string, completedAt: number): BatchRecord {
  return {
    batchId: state.batchId,
    requestHash: state.identified.requestHash,
    responseJson,
    completedAt,
    summary: { turn: state.turn, calls: state.results.length, statuses: { ...state.stats.callsByStatus } }
  }
}
