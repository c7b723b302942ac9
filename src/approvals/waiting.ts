/**
 * The pure core of approvals (SPEC section 13): which calls a batch holds,
 * decisions and expiry applied to its stored state, what the API shows of
 * it while it waits, and the decisions recorded in the results once it is
 * taken up. No I/O here. The stored state itself is the batch's
 * (`storedState` and `loadState`, src/batch/stored-state.ts).
 */
import { ProblemError } from '../errors.js'
import type { BatchEvent, CallResult } from '../model/result.js'
import type { RunStats } from '../model/run.js'
import type { PreparationOutcome } from '../model/call.js'
import { type Approvals, type Decider, type Decision, type HeldCall, type StoredOutcome, type StoredState, type WaitingBatch, isPending } from '../model/waiting.js'
import type { DecisionInput, PendingApproval } from './types.js'
import { weighCalls } from '../uncertain/batch.js'
import type { Uncertainty } from '../model/uncertainty.js'

/** Source positions of the prepared (not rejected) calls whose tool requires approval. */
export function heldIndexes (outcomes: readonly PreparationOutcome[]): number[] {
  const held: number[] = []
  for (const o of outcomes) if (o.ok && o.tool.requiresApproval) held.push(o.index)
  return held
}

/** The approvals of a batch about to be held: every prepared call of a tool that requires approval held, the batch's events so far. */
export function holdApprovals (outcomes: readonly PreparationOutcome[], events: readonly BatchEvent[]): Approvals {
  return { held: outcomes.map((o) => o.ok && o.tool.requiresApproval ? {} : null), events: [...events] }
}

/** Each held call no one has decided yet, by call index, with its stored outcome. */
function eachPending (state: StoredState, fn: (o: Extract<StoredOutcome, { ok: true }>, held: HeldCall, index: number) => void): void {
  state.outcomes.forEach((o, i) => {
    if (o.ok && isPending(state, i)) fn(o, state.approvals.held[i]!, i)
  })
}

/** How many calls of the batch wait for a decision. */
export function pendingCount (state: StoredState): number {
  let n = 0
  eachPending(state, () => { n++ })
  return n
}

/** Every call of the batch still waiting for a decision, as the API shows it. */
export function pendingApprovals (w: Pick<WaitingBatch, 'state' | 'requestedAt' | 'expiresAt'>, uncertain?: readonly Uncertainty[]): PendingApproval[] {
  const out: PendingApproval[] = []
  const requestedAt = new Date(w.requestedAt).toISOString()
  const expiresAt = new Date(w.expiresAt).toISOString()
  eachPending(w.state, (o, held, i) => {
    const entry: PendingApproval = { callId: w.state.calls[i]!.id, tool: o.tool, arguments: o.arguments, requestedAt, expiresAt }
    // Said while the write it retries is still unresolved: approving it then would not run it.
    if (held.retryOf !== undefined && uncertain?.some((u) => u.operationId === held.retryOf) === true) entry.blockedBy = held.retryOf
    out.push(entry)
  })
  return out
}

/**
 * Marks the held calls that retry one of the run's unresolved uncertain
 * writes and would be `blocked` at admission (SPEC section 14), inside the
 * update that holds the batch: the person asked sees it before deciding.
 */
export function markBlockedRetries (approvals: Approvals, uncertain: readonly Uncertainty[] | undefined, outcomes: readonly PreparationOutcome[], fingerprints: readonly string[]): void {
  const weighed = weighCalls(uncertain, outcomes, fingerprints)
  approvals.held.forEach((held, i) => {
    const h = weighed[i]
    if (held !== null && outcomes[i]?.ok === true && h?.kind === 'blocked') held.retryOf = h.by.operationId
  })
}

/** The next event of the batch, numbered after those it has. */
function nextEvent (approvals: Approvals, at: number, event: Omit<BatchEvent, 'seq' | 'at'>): BatchEvent {
  const seq = (approvals.events.at(-1)?.seq ?? 0) + 1
  const full = { seq, at: new Date(at).toISOString(), ...event } as BatchEvent
  approvals.events.push(full)
  return full
}

/** The events announcing the held calls, after the batch's own. */
export function announceHeld (w: WaitingBatch): BatchEvent[] {
  const out: BatchEvent[] = []
  const { state } = w
  state.outcomes.forEach((o, i) => {
    if (o.ok && state.approvals.held[i] != null) out.push(nextEvent(state.approvals, w.requestedAt, { type: 'call.awaiting_approval', callId: state.calls[i]!.id, tool: o.tool }))
  })
  return out
}

/**
 * Applies a request's decisions, all or none: a call that is unknown, not
 * held, decided already, or named twice refuses the whole request with
 * `approval_not_pending`, before anything changes. `edits` holds, by call
 * id, what preparation made of an approver's edited arguments. Answers the
 * events the decisions add.
 */
export function applyDecisions (w: WaitingBatch, decisions: readonly DecisionInput[], edits: ReadonlyMap<string, StoredOutcome>,
  by: Decider, now: number): BatchEvent[] {
  const { state } = w
  if (w.phase !== 'awaiting') throw notPending(`Batch ${state.batchId} is not waiting for decisions any more.`)
  if (now >= w.expiresAt) throw notPending(`The approvals of batch ${state.batchId} expired at ${new Date(w.expiresAt).toISOString()}.`)
  const index = pendingIndex(state, decisions)
  const events: BatchEvent[] = []
  for (const d of decisions) {
    const i = index.get(d.callId)!
    const held = state.outcomes[i] as Extract<StoredOutcome, { ok: true }>
    const decision: Decision = { approve: d.approve, by, at: now }
    if (!d.approve && d.reason !== undefined) decision.reason = d.reason
    const edit = d.approve ? edits.get(d.callId) : undefined
    if (edit !== undefined) {
      decision.edited = true
      decision.arguments = { original: structuredClone(held.arguments), edited: structuredClone(edit.arguments) }
      // An edit that failed preparation leaves a rejection, decided as approved.
      state.outcomes[i] = edit
    }
    state.approvals.held[i]!.decision = decision
    const event = d.approve
      ? { type: 'call.approved' as const, callId: d.callId, tool: held.tool }
      : { type: 'call.denied' as const, callId: d.callId, tool: held.tool, reason: 'denied' }
    events.push(nextEvent(state.approvals, now, event))
  }
  return events
}

/**
 * The call index of each decision's call, once every one names a call
 * still pending, and none twice; thrown `approval_not_pending` otherwise.
 */
export function pendingIndex (state: StoredState, decisions: readonly DecisionInput[]): Map<string, number> {
  const all = new Map(state.calls.map((c, i) => [c.id, i]))
  const index = new Map<string, number>()
  for (const d of decisions) {
    const i = all.get(d.callId)
    if (i === undefined || !isPending(state, i) || index.has(d.callId)) throw notPending(`Call ${d.callId} is not waiting for a decision in batch ${state.batchId}.`)
    index.set(d.callId, i)
  }
  return index
}

/** Denies every call still pending with `approval_expired`, once the approvals' time is up; answers the events. */
export function expirePending (w: WaitingBatch, now: number): BatchEvent[] {
  if (w.phase !== 'awaiting' || now < w.expiresAt) return []
  const events: BatchEvent[] = []
  const { state } = w
  eachPending(state, (o, held, i) => {
    held.decision = { approve: false, by: null, at: now, expired: true }
    events.push(nextEvent(state.approvals, now, { type: 'call.denied', callId: state.calls[i]!.id, tool: o.tool, reason: 'approval_expired' }))
  })
  return events
}

/**
 * Withdraws calls still pending: their caller gave up on them before anyone
 * decided (an MCP client's `notifications/cancelled`), so they end
 * `cancelled`. No decision event: no one decided. Answers how many it withdrew.
 */
export function withdrawPending (w: WaitingBatch, callIds: ReadonlySet<string>, now: number): number {
  if (w.phase !== 'awaiting') return 0
  let withdrawn = 0
  eachPending(w.state, (_o, held, i) => {
    if (!callIds.has(w.state.calls[i]!.id)) return
    held.decision = { approve: false, by: null, at: now, withdrawn: true }
    withdrawn++
  })
  return withdrawn
}

/** How a decision shows in its call's `details.approval`: who (tenant and name, never a key), when, what. */
function approvalDetails (d: Decision): Record<string, unknown> {
  const out: Record<string, unknown> = { decision: d.expired === true ? 'expired' : d.approve ? 'approved' : 'denied', at: new Date(d.at).toISOString() }
  if (d.by !== null) out.by = d.by
  if (d.reason !== undefined) out.reason = d.reason
  if (d.edited === true) out.edited = true
  if (d.arguments !== undefined) out.arguments = d.arguments
  return out
}

/**
 * Records each held call's decision in its result's details, and counts the
 * decisions in the batch's figures (for the summaries).
 */
export function recordDecisions (results: readonly CallResult[], decisions: ReadonlyArray<Decision | undefined>, stats: RunStats): void {
  const counts = stats.approvals ?? (stats.approvals = { approved: 0, denied: 0, expired: 0 })
  decisions.forEach((d, i) => {
    // A call its caller withdrew was decided by no one: it is cancelled, with no approval to show or count.
    if (d === undefined || d.withdrawn === true) return
    const result = results[i]
    if (result !== undefined) (result.details as Record<string, unknown>).approval = approvalDetails(d)
    if (d.expired === true) counts.expired++
    else if (d.approve) counts.approved++
    else counts.denied++
  })
}

function notPending (detail: string): ProblemError {
  return new ProblemError('approval_not_pending', detail)
}
