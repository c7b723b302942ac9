/** A batch held for approvals, as its run's record keeps it (SPEC section 13). */
import type { RawCall, RejectionReason } from './call.js'
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

/**
 * One call of a waiting batch, as preparation left it, in a form a store
 * can hold: a prepared call (held for a person or not), or a rejection.
 * Tools are named, not held: a batch taken up on another replica looks
 * them up there.
 */
export type StoredOutcome =
  | { ok: true, tool: string, arguments: Record<string, unknown>, held: boolean, decision?: Decision, conflictKey: string | null, retryOf?: string }
  | { ok: false, tool: string | null, reason: RejectionReason, message: string, arguments: unknown, decision?: Decision }

/** A batch waiting for decisions, kept in its run's record (so it is atomic with it in every store). */
export interface WaitingBatch {
  batchId: string
  requestHash: string
  turn: number
  /** `running` once a replica took it up; the record goes when its answer is stored. */
  phase: 'awaiting' | 'running'
  /** The scopes of the key that sent the batch: an edit is authorized as the batch was. */
  scopes: string[]
  /** The provider format the batch came in, when it came in one. */
  format?: string
  requestedAt: number
  expiresAt: number
  /** Ids and names of the calls, in source order (arguments are in `outcomes`), with what a provider format marked on them. */
  calls: Array<Pick<RawCall, 'id' | 'name' | 'kind' | 'generatedId'>>
  outcomes: StoredOutcome[]
  /** The host-visible events so far, numbered; the batch's answer continues them. */
  events: BatchEvent[]
}

/** A held call no one has decided yet. */
export function isPending (o: StoredOutcome): boolean {
  return o.ok && o.held && o.decision === undefined
}

export function hasPending (w: WaitingBatch): boolean {
  return w.outcomes.some(isPending)
}
