/**
 * Retry safety's rule (SPEC section 14) and what a batch does with it: a
 * write that retries one of the run's unresolved uncertain writes is held
 * back (blocked, or sent as the original operation when its tool is
 * idempotent); a finished batch adds its uncertain writes and resolves the
 * retries that got an answer. Pure functions over the batch's arrays
 * (indexed by call); the retry-safety guard (src/guards/retry-safety.ts)
 * calls them at admission and as the batch closes.
 */
import type { CallResult } from '../model/result.js'
import type { PreparationOutcome, PreparedCall } from '../model/call.js'
import type { Uncertainty } from '../model/uncertainty.js'

/** How a write of a batch stands against the run's unresolved uncertainties, decided at admission. */
export type HeldBack =
  /** Not dispatched: the same write's outcome is unknown. */
  | { kind: 'blocked', by: Uncertainty }
  /** An idempotent tool's retry: dispatched under the original operation id, its answer resolves `of`. */
  | { kind: 'retry', of: Uncertainty }

/** What admission needs of a call to weigh it against the run's uncertainties. */
export interface WeighedCall {
  fingerprint: string
  /** A prepared call of a tool that is not readOnly; reads and rejected calls are never held back. */
  write: boolean
  idempotent: boolean
  callId: string
  /** An action tool's: the same call id and fingerprint is the same operation, replayed from its receipt (SPEC section 7). */
  action: boolean
}

/**
 * Which calls of a batch are retries of an unresolved uncertain write (the
 * same fingerprint): a write is blocked, unless its tool is idempotent, in
 * which case the first such call of the batch is the retry (sent under the
 * original operation id) and any later one in the batch is blocked behind
 * it. Pure; indexed like `calls`, undefined where a call goes on as usual.
 */
export function holdBack (uncertain: readonly Uncertainty[] | undefined, calls: readonly WeighedCall[]): Array<HeldBack | undefined> {
  const out: Array<HeldBack | undefined> = []
  if (uncertain === undefined || uncertain.length === 0) return out
  const byFingerprint = new Map<string, Uncertainty>()
  // The latest wins: it is the one a model retrying now most likely repeats.
  for (const u of uncertain) byFingerprint.set(u.fingerprint, u)
  const retried = new Set<string>()
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i]!
    const u = c.write ? byFingerprint.get(c.fingerprint) : undefined
    // The very same call sent again (same call id): an action replays its receipt, which says it is uncertain.
    if (u === undefined || (c.action && c.callId === u.callId)) continue
    if (c.idempotent && !retried.has(u.operationId)) {
      retried.add(u.operationId)
      out[i] = { kind: 'retry', of: u }
    } else {
      out[i] = { kind: 'blocked', by: u }
    }
  }
  return out
}

/** What a finished batch changes in the run's uncertainties. */
export interface UncertainChange {
  added: Uncertainty[]
  /** Resolved by an idempotent retry's definitive answer. */
  retried: Uncertainty[]
}

/** One dispatched call of a finished batch, as the change is worked out from it. */
export interface SettledWrite {
  operationId: string
  fingerprint: string
  conflictKey: string | null
  callId: string
  tool: string
  action: boolean
  /** Its outcome is unknown (status `uncertain`, or an action whose receipt is). */
  uncertain: boolean
  /** It never reached the executor (`executor_unavailable`): its answer says nothing of the operation. */
  unsent: boolean
  held: HeldBack | undefined
  /** Its conflict key is tenant-scoped. */
  tenantKey?: boolean
  /** Why its outcome is unknown, when it is. */
  cause?: string
}

/** The change a batch's settled writes make: uncertain ones added (once per operation), idempotent retries that got an answer resolved. */
export function changeOf (batchId: string, writes: readonly SettledWrite[], now: number): UncertainChange {
  const added: Uncertainty[] = []
  const retried: Uncertainty[] = []
  const seen = new Set<string>()
  for (const w of writes) {
    if (w.held?.kind === 'retry') {
      // Uncertain again, or never sent: the original entry stays as it is.
      if (!w.uncertain && !w.unsent) retried.push(w.held.of)
      continue
    }
    if (!w.uncertain || seen.has(w.operationId)) continue
    seen.add(w.operationId)
    const u: Uncertainty = { operationId: w.operationId, fingerprint: w.fingerprint, conflictKey: w.conflictKey, callId: w.callId, batchId, tool: w.tool, action: w.action, since: now }
    if (w.tenantKey === true && w.conflictKey !== null) u.tenantKey = true
    if (w.cause !== undefined) u.cause = w.cause
    added.push(u)
  }
  return { added, retried }
}

/** Most unresolved uncertainties a run keeps; past it the oldest go (and stop blocking), so a record cannot grow without bound. */
export const MAX_UNCERTAIN_PER_RUN = 256

/** A run's list after a change: `resolved` holds the retried entries it still held (another resolution may have come first). */
export interface AppliedChange { list: Uncertainty[], dropped: Uncertainty[], resolved: Uncertainty[] }

/**
 * Applies a change to a run's list, inside the run's atomic update: answers
 * the new list, what fell off its end, and what the change resolved. An
 * operation already listed is not added twice.
 */
export function applyChange (list: readonly Uncertainty[] | undefined, change: UncertainChange): AppliedChange {
  const gone = new Set(change.retried.map((u) => u.operationId))
  const resolved: Uncertainty[] = []
  const next: Uncertainty[] = []
  for (const u of list ?? []) (gone.has(u.operationId) ? resolved : next).push(u)
  const listed = new Set(next.map((u) => u.operationId))
  for (const u of change.added) if (!listed.has(u.operationId)) next.push(u)
  const dropped = next.length > MAX_UNCERTAIN_PER_RUN ? next.splice(0, next.length - MAX_UNCERTAIN_PER_RUN) : []
  return { list: next, dropped, resolved }
}

// What a batch does with the rule, as the guard calls it.
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
