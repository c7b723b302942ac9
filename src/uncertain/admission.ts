import type { HeldBack } from './types.js'
import type { Uncertainty } from '../model/uncertainty.js'

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
