/**
 * A turn of one call cancelled before it started (SPEC section 16): an MCP
 * `tools/call` that its client cancelled, or whose session ended, while it
 * waited for its turn among its run's calls or for a batch holding the run.
 * Nothing of it ran and it never held the run's lease, yet it is a turn of
 * its run as every call is: its turn, its figures, its batch id and its
 * answer (the call `cancelled`, or `rejected` when preparation had refused
 * it) are recorded in one atomic step of the run (`Store.recordBatch`),
 * beside whatever batch holds the lease, and the metrics, logs and traces
 * hear of it as of any batch. It was never admitted, so the run's guards
 * (the call budget, the loop streaks, retry safety) do not count it.
 *
 * The batch id decides which of two ends a call gets: a batch the engine
 * started under it is not recorded here, and one recorded here is only
 * replayed, never run, if the engine is handed it after.
 */
import { performance } from 'node:perf_hooks'
import { ProblemError } from '../errors.js'
import { EventRecorder, round } from '../events/recorder.js'
import { requestIdentity } from '../formats/index.js'
import { startTurn } from '../guards/index.js'
import { cancelledResult, reasonOf, rejectedResult } from '../model/results.js'
import type { CallResult } from '../model/result.js'
import { addStats, emptyStats } from '../runs/stats.js'
import { ownedRun } from '../runs/transitions.js'
import type { BatchRequest, PreparedFirst, RunDeps } from './engine-types.js'
import { identifyCalls } from './identify-calls.js'
import { batchRecord } from './phases/answer.js'
import { respond } from './respond.js'
import { newBatchState } from './state.js'

/** A call cancelled before it started says so, as one its client withdrew while a person had to decide on it does. */
const REASON = 'cancelled'

/**
 * Records `req`, a batch of one call that never started (its calls prepared
 * before, `first`, when they were). False when nothing was recorded: the
 * run is gone, no longer active, or past a limit a new turn would meet (the
 * call then answers nothing, as it would have had it not been cancelled),
 * or the batch id is known already (the engine started it).
 */
export async function recordCancelled (deps: RunDeps, req: BatchRequest, first: PreparedFirst | undefined): Promise<boolean> {
  const t0 = performance.now()
  const call = req.calls[0]
  if (call === undefined || req.calls.length !== 1) throw new Error(`batch ${req.batchId} is not a turn of one call`)
  const identified = first?.identified ?? await identifyCalls(req.calls, requestIdentity(req.format, req.incomplete))
  const o = first?.ready.prepared.outcomes[0]
  const tool = o?.tool ?? deps.tools.resolve(call.name) ?? null
  // A refusal of preparation stands, as in a batch whose client went away; any other call never started.
  const result: CallResult = o !== undefined && !o.ok ? rejectedResult(o) : cancelledResult(o ?? { id: call.id, requestedName: call.name, tool }, REASON)
  const stats = emptyStats()
  stats.callsByStatus[result.status] = 1
  const wallMs = performance.now() - t0
  stats.wallTimeMs = wallMs
  let turn = 0
  let mode = ''
  let stored: boolean
  try {
    stored = await deps.store.recordBatch(req.runId, req.batchId, (run, recorded) => {
      ownedRun(run, req.tenant, req.runId, req.createdAt)
      const now = deps.clock.now()
      if (recorded !== undefined || run.state !== 'active' || startTurn(deps.guards, run, { now, tokens: 0 }) !== null) return undefined
      turn = ++run.counters.turns
      mode = run.options.toolExecution
      run.stats = addStats(run.stats ?? emptyStats(), stats)
      const state = newBatchState(req, run, turn, identified)
      state.results = [result]
      state.stats = stats
      // The host's events under the run's audience: the batch's start and end (no call of it started).
      const recorder = new EventRecorder(run.options.events)
      recorder.emit({ type: 'batch.started', size: 1 })
      recorder.emit({ type: 'batch.completed', durationMs: round(wallMs) })
      const closing = { state: run.state, terminationReason: run.terminationReason, terminatedNow: false }
      return batchRecord(state, respond(state, { recorder }, { closing }), now)
    })
  } catch (err) {
    if (err instanceof ProblemError && err.code === 'run_not_found') return false
    throw err
  }
  if (!stored) return false
  const observer = deps.telemetry.observeBatch({
    runId: req.runId, batchId: req.batchId, tenant: req.tenant, reqId: req.reqId, keyName: req.keyName, turn, calls: 1, mode, traceparent: req.traceparent, tracestate: req.tracestate
  })
  observer.callSettled?.({
    callId: call.id, tool: tool?.name ?? call.name, known: tool !== null, epoch: null, status: result.status, durationMs: null, uncertain: false, readOnly: tool?.readOnly ?? false, reason: reasonOf(result.details)
  })
  observer.batchCompleted?.('cancelled', wallMs)
  deps.onStats?.(stats)
  return true
}
