/** A batch held for approvals, as its run's record keeps it (SPEC section 13). */
import type { PreparationOutcome, RawCall, RejectionReason } from './call.js'
import type { BatchEvent } from './result.js'

/**
 * The owner of a run's lease while a batch of it waits for a person: no
 * replica holds it, so any replica may take the batch up when the last
 * decision comes (or the approvals expire). The lease lasts until a little
 * after the approvals expire, so the run is neither evicted nor expired
 * while it waits.
 */
export const WAITING_OWNER = 'approval'

/** Who decided a call: the tenant and the key's `name` when the keys file gives one; never the key. */
export interface Decider { tenant: string, name?: string }

/** A person's (or the clock's) decision on one held call. */
export interface Decision {
  approve: boolean
  /** A denial's reason, as the person wrote it. */
  reason?: string
  /** Null when no person decided: the approval expired. */
  by: Decider | null
  at: number
  /** The approver changed the arguments (they went through preparation again). */
  edited?: boolean
  /** With `edited`: the arguments as held and as the edit made them (prepared, or as far as preparation got). Shown to operators, never logged. */
  arguments?: { original: Record<string, unknown>, edited: unknown }
  expired?: boolean
  /** No one decided: the caller withdrew the call first (an MCP client's `notifications/cancelled`); it ends `cancelled`, not `denied`. */
  withdrawn?: boolean
}

/** A call of a batch as the model wrote it, without its arguments (those are in its outcome), with what a provider format marked on it. */
export type StoredCall = Pick<RawCall, 'id' | 'name' | 'kind' | 'generatedId'>

/**
 * One call as preparation left it, in a form a store can hold: tools are
 * named, not held; a batch taken up on another replica looks them up there.
 */
export type StoredOutcome =
  | { ok: true, tool: string, arguments: Record<string, unknown>, conflictKey: string | null }
  | { ok: false, tool: string | null, reason: RejectionReason, message: string, arguments: unknown }

/** A call a batch holds for a person: the decision once made, and the unresolved uncertain write it retries (admission would block it). */
export interface HeldCall {
  decision?: Decision
  retryOf?: string
}

/** A held batch's approvals: plain data, in its state as in its stored form. */
export interface Approvals {
  /** By call index: the call held for a person, or null for one that needs no decision. */
  held: Array<HeldCall | null>
  /** The host-visible events so far, numbered; the batch's answer continues them. */
  events: BatchEvent[]
}

/**
 * A batch's state as a store keeps it (`BatchState`, src/batch/state.ts):
 * plain JSON, tools named and scopes a list. Only a batch held before its
 * admission is stored: it runs on from the admit phase, and the run holds
 * its options.
 */
export interface StoredState {
  batchId: string
  turn: number
  /** In source order. */
  calls: StoredCall[]
  /** The scopes of the key that sent the batch: an edit is authorized as the batch was. */
  scopes: string[]
  /** The provider format the batch came in, when it came in one. */
  format?: string
  /** By call index, as prepared. */
  outcomes: StoredOutcome[]
  approvals: Approvals
}

/** A batch waiting for decisions, kept in its run's record (so it is atomic with it in every store): its state, and what waiting needs. */
export interface WaitingBatch {
  /** `running` once a replica took it up; the record goes when its answer is stored. */
  phase: 'awaiting' | 'running'
  /** The hash of the batch's request, for its state's identity when it is taken up. */
  requestHash: string
  requestedAt: number
  expiresAt: number
  state: StoredState
}

/** A preparation outcome as a store holds it. */
export function storedOutcome (o: PreparationOutcome): StoredOutcome {
  // Arguments are copied: preparation may have filled them in place, and the record must not share them with the request.
  if (o.ok) return { ok: true, tool: o.tool.name, arguments: structuredClone(o.arguments), conflictKey: o.conflictKey }
  return { ok: false, tool: o.tool?.name ?? null, reason: o.reason, message: o.message, arguments: structuredClone(o.arguments) }
}

/** Whether call `index` is held and no one has decided it yet. */
export function isPending (state: StoredState, index: number): boolean {
  return state.outcomes[index]?.ok === true && isUndecided(state.approvals.held[index])
}

function isUndecided (held: HeldCall | null | undefined): boolean {
  return held != null && held.decision === undefined
}

export function hasPending (w: WaitingBatch): boolean {
  return w.state.outcomes.some((_, i) => isPending(w.state, i))
}

/**
 * The form an earlier version of toolgate stored a waiting batch in: the
 * batch's fields beside waiting's own, and the approvals on each outcome.
 * A batch held before an upgrade is read in it once.
 */
export interface EarlierWaitingBatch {
  batchId: string
  requestHash: string
  turn: number
  phase: 'awaiting' | 'running'
  scopes: string[]
  format?: string
  requestedAt: number
  expiresAt: number
  calls: StoredCall[]
  outcomes: EarlierOutcome[]
  events: BatchEvent[]
}

/** An outcome of an earlier waiting batch: whether it is held, and its decision, on it. */
export type EarlierOutcome =
  | { ok: true, tool: string, arguments: Record<string, unknown>, held: boolean, decision?: Decision, conflictKey: string | null, retryOf?: string }
  | { ok: false, tool: string | null, reason: RejectionReason, message: string, arguments: unknown, decision?: Decision }

/** A waiting batch as stored by this version or an earlier one, in this version's form (the same object when it is in it already). */
export function currentWaiting (w: WaitingBatch | EarlierWaitingBatch): WaitingBatch {
  if ('state' in w) return w
  const held: Array<HeldCall | null> = []
  const outcomes = w.outcomes.map((o): StoredOutcome => {
    // A held call, or an approved edit that failed preparation (a rejection, decided).
    const call: HeldCall | null = (o.ok && o.held) || o.decision !== undefined ? {} : null
    if (call !== null && o.decision !== undefined) call.decision = o.decision
    if (call !== null && o.ok && o.retryOf !== undefined) call.retryOf = o.retryOf
    held.push(call)
    return o.ok
      ? { ok: true, tool: o.tool, arguments: o.arguments, conflictKey: o.conflictKey }
      : { ok: false, tool: o.tool, reason: o.reason, message: o.message, arguments: o.arguments }
  })
  const state: StoredState = { batchId: w.batchId, turn: w.turn, calls: w.calls, scopes: w.scopes, outcomes, approvals: { held, events: w.events } }
  if (w.format !== undefined) state.format = w.format
  return { phase: w.phase, requestHash: w.requestHash, requestedAt: w.requestedAt, expiresAt: w.expiresAt, state }
}
