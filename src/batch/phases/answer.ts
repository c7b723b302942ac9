/**
 * The answer phase: one result per call in source order, the batch's last
 * changes to its run (uncertain writes, termination, figures, loop state),
 * its answer stored as its lease is released, and the response rendered
 * (with `messages` in the provider format the calls came in).
 */
import { performance } from 'node:perf_hooks'
import { recordDecisions } from '../../approvals/results.js'
import { round } from '../../events/recorder.js'
import { renderMessages } from '../../formats/index.js'
import { releaseWithAnswer } from '../../runs/lease.js'
import { addStats, emptyStats } from '../../runs/stats.js'
import { settleAnswered, terminate } from '../../runs/transitions.js'
import type { RunRecord, TerminationReason } from '../../model/run.js'
import type { BatchRecord } from '../../store/types.js'
import type { BatchOutcome } from '../../telemetry/types.js'
import type { UncertainChange } from '../../uncertain/admission.js'
import { batchChange, blockers, recordChange } from '../../uncertain/batch.js'
import type { BatchAnswer } from '../engine-types.js'
import { type BatchRuntime, watchLoops } from '../runtime.js'
import { type BatchState, PENDING, type Prepared } from '../state.js'
import type { BatchResponse } from '../../model/result.js'

/** How the batch left its run. */
interface Closing {
  state: RunRecord['state']
  terminationReason: TerminationReason | null
  terminatedNow: boolean
  uncertain: ReturnType<typeof recordChange> | undefined
}

/** The run was gone when the batch finished. */
const GONE: Closing = { state: 'ended', terminationReason: 'ended', terminatedNow: false, uncertain: undefined }

/** The answer phase: records the batch, releases the lease and builds the response. */
export async function answer (state: BatchState, rt: BatchRuntime, prepared: Prepared): Promise<BatchAnswer> {
  // What settled after the last epoch (or with no epoch at all) is walked too.
  watchLoops(state, rt)
  const { store } = rt.deps
  const { results, stats, closed } = state
  const signal = rt.controller
  const reason = signal.aborted ? String(signal.reason) : null
  const wallMs = performance.now() - rt.startedAt
  stats.wallTimeMs += wallMs
  if (state.approvals !== undefined) recordDecisions(results, state.approvals.decisions, stats)
  for (const r of results) {
    if (r === PENDING) throw new Error('a call of the batch never settled')
    stats.callsByStatus[r.status] = (stats.callsByStatus[r.status] ?? 0) + 1
  }

  // Terminal states this batch causes, unless the run already left `active`.
  const ending: TerminationReason | null = closed ? 'projection_failed' : state.loopStop ?? (reason === 'timeout' ? 'timeout' : null)
  const held = state.admitted?.held ?? []
  const change = batchChange(state.batchId, results, state.dispatched, state.operations, held, prepared.fingerprints, rt.deps.clock.now())
  await rt.deps.uncertain?.noteAdded(state.runId, change, state.tenant)
  const { observer, recorder } = rt
  let closing: Closing | undefined
  let responseJson = ''
  let stored: boolean
  if (ending === null) {
    // Nothing this batch does ends the run, so no event depends on the run as stored: its last
    // changes to the run, its answer and the release of its lease are one atomic step.
    recorder.emit({ type: 'batch.completed', durationMs: round(wallMs) })
    stored = await releaseWithAnswer(store, state.runId, rt.deps, (r) => {
      closing = close(state, rt, r, null, change)
      responseJson = respond(state, rt, closing)
      return record(state, responseJson, rt.deps.clock.now())
    })
  } else {
    // The run's termination is an event of the answer, known only once the run is updated: two steps.
    const finalized = await store.updateRun(state.runId, (r) => close(state, rt, r, ending, change))
    if (finalized.found) closing = finalized.value
    if (closing?.terminatedNow === true) observer.runTerminated(ending)
    recorder.emit({ type: 'batch.completed', durationMs: round(wallMs) })
    responseJson = respond(state, rt, closing ?? GONE)
    stored = await releaseWithAnswer(store, state.runId, rt.deps, record(state, responseJson, rt.deps.clock.now()))
  }
  if (closing === undefined) responseJson = respond(state, rt, GONE)
  const left = closing ?? GONE
  rt.deps.onStats?.(stats)
  const outcome: BatchOutcome = closed ? 'closed' : left.state === 'terminated' ? 'terminated' : reason !== null ? 'cancelled' : 'completed'
  observer.batchCompleted(outcome, wallMs)
  // Not stored: the lease passed to another replica, whose answer is the batch's answer once it has one.
  if (!stored) responseJson = (await store.getBatch(state.runId, state.batchId))?.responseJson ?? responseJson
  if (left.uncertain !== undefined) rt.deps.uncertain?.afterBatch(state.runId, change, left.uncertain, blockers(held), state.tenant)
  return {
    body: responseJson,
    replayed: false,
    log: { runId: state.runId, batchId: state.batchId, turn: state.turn, calls: results.length, outcome }
  }
}

/** Inside the run's atomic update: the batch's last changes to its run (uncertainties, termination, summaries, loop state). */
function close (state: BatchState, rt: BatchRuntime, r: RunRecord, ending: TerminationReason | null, change: UncertainChange): Closing {
  const kept = recordChange(r, change)
  const terminatedNow = ending !== null && terminate(r, ending)
  r.stats = addStats(r.stats ?? emptyStats(), state.stats)
  settleAnswered(r, state.batchId, rt.deps.replicaId)
  rt.loops?.save(r)
  return { state: r.state, terminationReason: r.terminationReason, terminatedNow, uncertain: kept }
}

/** The batch's answer as JSON text, the run as `closing` left it. */
function respond (state: BatchState, rt: BatchRuntime, closing: Closing): string {
  const response: BatchResponse = {
    runId: state.runId,
    batchId: state.batchId,
    turn: state.turn,
    state: 'completed',
    results: state.results,
    events: rt.recorder.events,
    policyMessages: state.policyMessages,
    continue: closing.state === 'active' && !state.closed,
    run: closing.terminationReason === null ? { state: closing.state } : { state: closing.state, terminationReason: closing.terminationReason }
  }
  if (state.format !== undefined) response.messages = renderMessages(state.format, state.results, state.policyMessages, state.calls)
  return JSON.stringify(response)
}

/** What the store keeps of the finished batch, for resends and the run's batch list. */
function record (state: BatchState, responseJson: string, completedAt: number): BatchRecord {
  return {
    batchId: state.batchId,
    requestHash: state.identified.requestHash,
    responseJson,
    completedAt,
    summary: { turn: state.turn, calls: state.results.length, statuses: { ...state.stats.callsByStatus } }
  }
}
