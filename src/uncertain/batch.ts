/**
 * What a batch does with the run's uncertainties, as the engine calls it:
 * weigh the calls at admission, say why a blocked one waits, and work out what
 * the finished batch adds and resolves. Pure functions over the batch's
 * arrays (indexed by call), so the engine's own lines stay few.
 */
import type { CallResult } from '../model/result.js'
import type { PreparationOutcome, PreparedCall } from '../model/call.js'
import { type AppliedChange, type UncertainChange, applyChange, changeOf, holdBack, type SettledWrite } from './admission.js'
import type { HeldBack } from './types.js'
import type { Uncertainty } from '../model/uncertainty.js'

/** At admission, inside the run's atomic update: which calls are retries of an unresolved uncertain write. */
export function weighCalls (uncertain: readonly Uncertainty[] | undefined, outcomes: readonly PreparationOutcome[], fingerprints: readonly string[]): Array<HeldBack | undefined> {
  if (uncertain === undefined || uncertain.length === 0) return []
  return holdBack(uncertain, outcomes.map((o, i) => ({
    fingerprint: fingerprints[i]!,
    write: o.ok && !o.tool.readOnly,
    idempotent: o.tool?.idempotent ?? false,
    callId: o.id,
    action: o.tool?.action != null
  })))
}

/**
 * What the finished batch changes: its writes that came out uncertain, and
 * the idempotent retries that got a definitive answer. `operations` holds
 * the operation id of every call that was dispatched.
 */
export function batchChange (batchId: string, results: readonly CallResult[], prepared: ReadonlyArray<PreparedCall | undefined>, operations: ReadonlyArray<string | undefined>,
  held: ReadonlyArray<HeldBack | undefined>, fingerprints: readonly string[], now: number): UncertainChange {
  const writes: SettledWrite[] = []
  for (let i = 0; i < results.length; i++) {
    const operationId = operations[i]
    const call = prepared[i]
    if (operationId === undefined || call === undefined || call.tool.readOnly) continue
    const r = results[i]!
    writes.push({
      operationId,
      fingerprint: fingerprints[i]!,
      conflictKey: call.conflictKey,
      callId: call.id,
      tool: call.tool.name,
      action: call.tool.action !== null,
      uncertain: r.status === 'uncertain' || r.details.receipt?.status === 'uncertain',
      unsent: r.details.reason === 'executor_unavailable',
      held: held[i],
      tenantKey: call.tool.conflictScope === 'tenant',
      cause: r.details.cause ?? causeOf(r.details.receipt?.result)
    })
  }
  return changeOf(batchId, writes, now)
}

/** The cause an uncertain action's receipt gives. */
function causeOf (result: unknown): string | undefined {
  const cause = (result as { cause?: unknown } | null | undefined)?.cause
  return typeof cause === 'string' ? cause : undefined
}

/** Inside the batch's final update of the run: records the change (nothing when there is none); answers the list as it stands, what fell off it and what it resolved. */
export function recordChange (run: { uncertain?: Uncertainty[] }, change: UncertainChange): AppliedChange {
  if (change.added.length + change.retried.length === 0) return { list: run.uncertain ?? [], dropped: [], resolved: [] }
  const kept = applyChange(run.uncertain, change)
  if (kept.list.length > 0) run.uncertain = kept.list
  else delete run.uncertain
  return kept
}

/** The uncertainties that blocked calls of a batch. */
export function blockers (held: ReadonlyArray<HeldBack | undefined>): Uncertainty[] {
  const out: Uncertainty[] = []
  for (const h of held) if (h?.kind === 'blocked') out.push(h.by)
  return out
}
