/**
 * The admit and settle phases: inside one atomic update of the run, the
 * maxToolCalls budget, the exact-repeat streak and the cycle detector
 * decide which calls go on (src/batch/admit.ts, loop-watch.ts), and the
 * run's unresolved uncertain writes which are held back
 * (src/uncertain/batch.ts); then every call that will not be dispatched is
 * settled: rejected, terminated, denied, blocked or cancelled.
 */
import { policyMessage } from '../../repeat/tracker.js'
import { terminate } from '../../runs/transitions.js'
import type { RunRecord } from '../../model/run.js'
import { weighCalls } from '../../uncertain/batch.js'
import { admit as decide, type Admission } from '../admit.js'
import { LoopWatch, admitLoops } from '../loop-watch.js'
import { type CallResult } from '../../model/result.js'
import { cancelledResult, deniedResult, reasonOf, rejectedResult, terminatedResult, uncertainBlockedResult } from '../../model/results.js'
import { type BatchRuntime, watchLoops } from '../runtime.js'
import { type Admitted, type BatchState, PENDING, type Prepared, callAt } from '../state.js'

/** Inside the run's atomic update: the repeat streak, the call budget and the state decide which calls go on. */
export function admitInto (r: RunRecord, batchId: string, prepared: Prepared): Admitted {
  if (r.state !== 'active') return { verdict: r.terminationReason ?? 'run_not_active', loopStart: null, held: [] }
  const { outcomes, fingerprints } = prepared
  // A resumed batch is admitted again from where its first admission started: its calls count once.
  const from = r.admitted?.batchId === batchId ? r.admitted : { batchId, repeat: r.repeat, toolCalls: r.counters.toolCalls }
  const a = decide(from.repeat, from.toolCalls, r.options.limits, outcomes.map((o, i) => ({ fingerprint: callAt(fingerprints, i, 'fingerprint'), tracked: o.tool?.trackExactRepeats ?? true })))
  const loopStart = admitLoops(r, from, a, outcomes, fingerprints)
  r.admitted = from
  const held = weighCalls(r.uncertain, outcomes, fingerprints)
  r.repeat = a.repeat
  r.counters.toolCalls = from.toolCalls + a.admitted
  if (a.termination !== null) terminate(r, a.termination.reason)
  return { verdict: a, loopStart, held }
}

/** The admit phase: admits the batch in its own update of the run; undefined when the run is gone (nothing may start). */
export async function admit (state: BatchState, rt: BatchRuntime, prepared: Prepared): Promise<Admitted | undefined> {
  const update = await rt.deps.store.updateRun(state.runId, (r) => admitInto(r, state.batchId, prepared))
  return update.found ? update.value : undefined
}

/** The settle phase: starts the detectors that read results, and settles every call admission does not let through. */
export function settle (state: BatchState, rt: BatchRuntime, prepared: Prepared, admitted: Admitted | undefined): void {
  const { observer } = rt
  const verdict = admitted?.verdict
  // A string: the run left `active` during preparation (cancel, DELETE) and nothing may start.
  const admission = verdict !== undefined && typeof verdict !== 'string' ? verdict : null
  const stoppedBy = typeof verdict === 'string' ? verdict : 'ended'
  const loopStart = admitted?.loopStart ?? null
  if (admission !== null && loopStart !== null) {
    rt.loops = new LoopWatch({
      observer, stats: state.stats, messages: state.policyMessages, outcomes: prepared.outcomes, fingerprints: prepared.fingerprints, pending: PENDING, limits: state.options.limits, start: loopStart, active: admission.termination === null
    })
  }
  settleUnadmitted(state, rt, prepared, admission, admitted?.held ?? [], stoppedBy)
  if (admission?.termination != null) observer.runTerminated(admission.termination.reason)
  // The rejections before the first epoch are results the detectors read too.
  watchLoops(state, rt)
}

/** Settles every call that will not be dispatched (rejected, terminated, not admitted); lists those that will. */
function settleUnadmitted (state: BatchState, rt: BatchRuntime, prepared: Prepared, admission: Admission | null, held: Admitted['held'], stoppedBy: string): void {
  const { observer, controller } = rt
  const { stats, dispatchable, dispatched } = state
  const outcomes = prepared.outcomes
  const results = outcomes.map(() => PENDING)
  state.results = results
  const notActiveReason = controller.aborted ? String(controller.reason) : stoppedBy
  for (let i = 0; i < outcomes.length; i++) {
    const o = callAt(outcomes, i, 'outcome')
    const decision = admission?.decisions[i]
    const tool = o.tool?.name ?? o.requestedName
    let settled: CallResult | null = null
    if (decision?.cycle !== undefined) rt.loops?.cycleDetected(i, decision.cycle)
    if (decision === undefined) {
      // A rejection answered while the batch waited for approvals stays one.
      settled = !o.ok && state.approvals !== undefined ? rejectedResult(o) : cancelledResult(o, notActiveReason)
    } else if (decision.kind === 'terminated') {
      settled = terminatedResult(o, decision.reason)
      if (decision.count !== null) {
        stats.repeatTerminations++
        observer.repeatDetected({ callId: o.id, tool, known: o.tool !== null, epoch: null }, 'terminated', decision.count)
      }
    } else {
      if (decision.advisory !== null) {
        stats.repeatAdvisories++
        observer.repeatDetected({ callId: o.id, tool, known: o.tool !== null, epoch: null }, 'advisory', decision.advisory)
        state.policyMessages.push({ type: 'agent_policy', content: policyMessage(tool, decision.advisory) })
      }
      const approval = state.approvals?.decisions[i]
      const heldBack = held[i]
      if (o.ok && approval?.approve === false) {
        settled = approval.withdrawn === true ? cancelledResult(o, 'cancelled') : deniedResult(o, approval)
      } else if (o.ok && heldBack?.kind === 'blocked') {
        stats.blockedCalls++
        settled = uncertainBlockedResult(o, heldBack.by)
      } else if (o.ok) {
        dispatchable.push(o)
        dispatched[i] = o
      } else {
        settled = rejectedResult(o)
      }
    }
    if (settled !== null) {
      results[i] = settled
      observer.callSettled({
        callId: o.id, tool, known: o.tool !== null, epoch: null, status: settled.status, durationMs: null, uncertain: false, readOnly: o.tool?.readOnly ?? false, reason: reasonOf(settled.details)
      })
    }
  }
}
