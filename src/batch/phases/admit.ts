/**
 * The admit and settle phases: inside one atomic update of the run, the
 * guards (src/guards/) decide which calls go on, each from its slice of the
 * run (the call budget, the loop streaks, the decisions on held calls, the
 * unresolved uncertain writes); then every call that will not be dispatched
 * is settled: rejected, terminated, cancelled, or as a guard's verdict says.
 */
import { admitThrough } from '../../guards/admission.js'
import { stopMessage } from '../../guards/index.js'
import { type BatchGuard, GO, type GuardedBatch, type Verdict } from '../../guards/types.js'
import type { RunRecord } from '../../model/run.js'
import { type CallResult } from '../../model/result.js'
import { cancelledResult, reasonOf, rejectedResult, terminatedResult } from '../../model/results.js'
import { type BatchRuntime, watchGuards } from '../runtime.js'
import { type Admitted, type BatchState, PENDING, type Ready, callAt } from '../state.js'

/** Inside the run's atomic update: the guards decide which calls go on. */
export function admitInto (r: RunRecord, batch: GuardedBatch, guards: readonly BatchGuard[]): Admitted {
  return admitThrough(guards, r, batch)
}

/** The admit phase: admits the batch in its own update of the run; undefined when the run is gone (nothing may start). */
export async function admit (state: BatchState, rt: BatchRuntime, ready: Ready): Promise<Admitted | undefined> {
  const update = await rt.deps.store.updateRun(state.runId, (r) => admitInto(r, ready.batch, ready.guards))
  return update.found ? update.value : undefined
}

/** The settle phase: the guards begin watching, and every call admission does not let through is settled. */
export function settle (state: BatchState, rt: BatchRuntime, ready: Ready, admitted: Admitted | undefined): void {
  const active = admitted !== undefined && admitted.notActive === null ? admitted : null
  if (active !== null) for (const g of ready.guards) g.begin?.(rt.view, active)
  settleUnadmitted(state, rt, ready, active, admitted?.notActive ?? 'ended')
  if (active?.stop != null) rt.observer.runTerminated(active.stop.reason)
  // The rejections before the first epoch are results the guards read too.
  watchGuards(state, rt, ready.guards)
}

/** Settles every call that will not be dispatched (rejected, terminated, a guard's verdict, not admitted); lists those that will. */
function settleUnadmitted (state: BatchState, rt: BatchRuntime, ready: Ready, admitted: Admitted | null, stoppedBy: string): void {
  const { observer, controller } = rt
  const { dispatchable, dispatched } = state
  const outcomes = ready.prepared.outcomes
  const results = outcomes.map(() => PENDING)
  state.results = results
  const notActiveReason = controller.aborted ? String(controller.reason) : stoppedBy
  const reporters = ready.guards.filter((g) => g.report !== undefined)
  for (let i = 0; i < outcomes.length; i++) {
    const o = callAt(outcomes, i, 'outcome')
    let settled: CallResult | null = null
    if (admitted === null) {
      // A rejection answered while the batch waited for approvals stays one.
      settled = !o.ok && state.approvals !== undefined ? rejectedResult(o) : cancelledResult(o, notActiveReason)
    } else {
      const stop = admitted.stop
      const verdict: Verdict = stop !== null && i >= admitted.cut
        ? { kind: 'settle', result: terminatedResult(o, stop.reason, stopMessage(rt.deps.guards, stop.reason)), by: stop.by }
        : admitted.verdicts[i] ?? GO
      for (const g of reporters) g.report?.(i, verdict, admitted)
      if (verdict.kind === 'settle') {
        settled = verdict.result
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
        callId: o.id, tool: o.tool?.name ?? o.requestedName, known: o.tool !== null, epoch: null, status: settled.status, durationMs: null, uncertain: false, readOnly: o.tool?.readOnly ?? false, reason: reasonOf(settled.details)
      })
    }
  }
}
