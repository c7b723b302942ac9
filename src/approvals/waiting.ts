/**
 * The pure core of approvals (SPEC section 13): which calls a batch holds,
 * the waiting batch a store keeps, decisions and expiry applied to it, and
 * the calls restored from it when the batch is taken up, and the decisions
 * recorded in the results. No I/O here.
 */
import { ProblemError } from '../errors.js'
import type { BatchEvent, CallResult } from '../model/result.js'
import type { RunStats } from '../model/run.js'
import type { PreparationOutcome, PreparedCall, RawCall, RejectedCall } from '../model/call.js'
import type { ToolLookup } from '../model/tool.js'
import { type Decider, type Decision, type StoredOutcome, type WaitingBatch, isPending } from '../model/waiting.js'
import type { DecisionInput, PendingApproval } from './types.js'
import { weighCalls } from '../uncertain/batch.js'
import type { Uncertainty } from '../model/uncertainty.js'

/** Source positions of the prepared (not rejected) calls whose tool requires approval. */
export function heldIndexes (outcomes: readonly PreparationOutcome[]): number[] {
  const held: number[] = []
  for (const o of outcomes) if (o.ok && o.tool.requiresApproval) held.push(o.index)
  return held
}

export interface WaitingInput {
  batchId: string
  requestHash: string
  turn: number
  scopes: Iterable<string>
  format?: string | undefined
  now: number
  ttlMs: number
  outcomes: readonly PreparationOutcome[]
  events: BatchEvent[]
  /** The calls as they came, for what a provider format marked on them (`kind`, `generatedId`). */
  calls?: readonly RawCall[]
}

/** A waiting batch's entry for a call: its id and name, and the provider format's marks on it. */
function callOf (o: PreparationOutcome, raw: RawCall | undefined): WaitingBatch['calls'][number] {
  const call: WaitingBatch['calls'][number] = { id: o.id, name: o.requestedName }
  if (raw?.kind !== undefined) call.kind = raw.kind
  if (raw?.generatedId === true) call.generatedId = true
  return call
}

/** The waiting batch of prepared outcomes, every call of a tool that requires approval held. */
export function toWaiting (input: WaitingInput): WaitingBatch {
  const w: WaitingBatch = {
    batchId: input.batchId,
    requestHash: input.requestHash,
    turn: input.turn,
    phase: 'awaiting',
    scopes: [...input.scopes],
    requestedAt: input.now,
    expiresAt: input.now + input.ttlMs,
    calls: input.outcomes.map((o) => callOf(o, input.calls?.[o.index])),
    outcomes: input.outcomes.map(storeOutcome),
    events: input.events
  }
  if (input.format !== undefined) w.format = input.format
  return w
}

/** A preparation outcome as a store holds it; `held` for a prepared call of a tool that requires approval. */
export function storeOutcome (o: PreparationOutcome): StoredOutcome {
  // Arguments are copied: preparation may have filled them in place, and the record must not share them with the request.
  if (o.ok) return { ok: true, tool: o.tool.name, arguments: structuredClone(o.arguments), held: o.tool.requiresApproval, conflictKey: o.conflictKey }
  return { ok: false, tool: o.tool?.name ?? null, reason: o.reason, message: o.message, arguments: structuredClone(o.arguments) }
}

/** Every call of the batch still waiting for a decision, as the API shows it. */
export function pendingApprovals (w: WaitingBatch, uncertain?: readonly Uncertainty[]): PendingApproval[] {
  const out: PendingApproval[] = []
  const requestedAt = new Date(w.requestedAt).toISOString()
  const expiresAt = new Date(w.expiresAt).toISOString()
  w.outcomes.forEach((o, i) => {
    if (!o.ok || !isPending(o)) return
    const entry: PendingApproval = { callId: w.calls[i]!.id, tool: o.tool, arguments: o.arguments, requestedAt, expiresAt }
    // Said while the write it retries is still unresolved: approving it then would not run it.
    if (o.retryOf !== undefined && uncertain?.some((u) => u.operationId === o.retryOf) === true) entry.blockedBy = o.retryOf
    out.push(entry)
  })
  return out
}

/**
 * Marks the held calls that retry one of the run's unresolved uncertain
 * writes and would be `blocked` at admission (SPEC section 14), inside the
 * update that holds the batch: the person asked sees it before deciding.
 */
export function markBlockedRetries (w: WaitingBatch, uncertain: readonly Uncertainty[] | undefined, outcomes: readonly PreparationOutcome[], fingerprints: readonly string[]): void {
  const weighed = weighCalls(uncertain, outcomes, fingerprints)
  w.outcomes.forEach((o, i) => {
    const h = weighed[i]
    if (o.ok && o.held && h?.kind === 'blocked') o.retryOf = h.by.operationId
  })
}

/** The next event of the batch, numbered after those it has. */
function nextEvent (w: WaitingBatch, at: number, event: Omit<BatchEvent, 'seq' | 'at'>): BatchEvent {
  const seq = (w.events.at(-1)?.seq ?? 0) + 1
  const full = { seq, at: new Date(at).toISOString(), ...event } as BatchEvent
  w.events.push(full)
  return full
}

/** The events announcing the held calls, after the batch's own. */
export function announceHeld (w: WaitingBatch): BatchEvent[] {
  const out: BatchEvent[] = []
  w.outcomes.forEach((o, i) => {
    if (o.ok && o.held) out.push(nextEvent(w, w.requestedAt, { type: 'call.awaiting_approval', callId: w.calls[i]!.id, tool: o.tool }))
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
  if (w.phase !== 'awaiting') throw notPending(`Batch ${w.batchId} is not waiting for decisions any more.`)
  if (now >= w.expiresAt) throw notPending(`The approvals of batch ${w.batchId} expired at ${new Date(w.expiresAt).toISOString()}.`)
  const index = new Map(w.calls.map((c, i) => [c.id, i]))
  const seen = new Set<string>()
  for (const d of decisions) {
    const i = index.get(d.callId)
    if (i === undefined || !isPending(w.outcomes[i]!) || seen.has(d.callId)) throw notPending(`Call ${d.callId} is not waiting for a decision in batch ${w.batchId}.`)
    seen.add(d.callId)
  }
  const events: BatchEvent[] = []
  for (const d of decisions) {
    const i = index.get(d.callId)!
    const held = w.outcomes[i] as Extract<StoredOutcome, { ok: true }>
    const decision: Decision = { approve: d.approve, by, at: now }
    if (!d.approve && d.reason !== undefined) decision.reason = d.reason
    const edit = d.approve ? edits.get(d.callId) : undefined
    if (edit !== undefined) {
      decision.edited = true
      decision.arguments = { original: structuredClone(held.arguments), edited: structuredClone(edit.arguments) }
    }
    // An edit that failed preparation leaves a rejection, decided as approved.
    w.outcomes[i] = { ...(edit ?? held), ...(edit?.ok === true ? { held: true } : {}), decision }
    const event = d.approve
      ? { type: 'call.approved' as const, callId: d.callId, tool: held.tool }
      : { type: 'call.denied' as const, callId: d.callId, tool: held.tool, reason: 'denied' }
    events.push(nextEvent(w, now, event))
  }
  return events
}

/** Denies every call still pending with `approval_expired`, once the approvals' time is up; answers the events. */
export function expirePending (w: WaitingBatch, now: number): BatchEvent[] {
  if (w.phase !== 'awaiting' || now < w.expiresAt) return []
  const events: BatchEvent[] = []
  w.outcomes.forEach((o, i) => {
    if (!o.ok || !isPending(o)) return
    o.decision = { approve: false, by: null, at: now, expired: true }
    events.push(nextEvent(w, now, { type: 'call.denied', callId: w.calls[i]!.id, tool: o.tool, reason: 'approval_expired' }))
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
  w.outcomes.forEach((o, i) => {
    if (!o.ok || !isPending(o) || !callIds.has(w.calls[i]!.id)) return
    o.decision = { approve: false, by: null, at: now, withdrawn: true }
    withdrawn++
  })
  return withdrawn
}

/** What a taken-up batch needs of its decisions, by call index. */
export interface RestoredApprovals {
  outcomes: PreparationOutcome[]
  /** The decision on each held call (undefined for calls that were not held). */
  decisions: Array<Decision | undefined>
  /** The batch's host-visible events while it waited; its answer continues them. */
  events: BatchEvent[]
}

/**
 * The calls of a waiting batch as preparation outcomes again, tools looked
 * up by name on this replica (a tool removed meanwhile makes its call
 * `unknown_tool`). Denied calls stay prepared: they count for repeats like
 * any prepared call; the engine answers them `denied` instead of running them.
 */
export function restoreOutcomes (w: WaitingBatch, tools: ToolLookup): RestoredApprovals {
  const outcomes: PreparationOutcome[] = []
  const decisions: Array<Decision | undefined> = []
  w.outcomes.forEach((o, index) => {
    const { id, name: requestedName } = w.calls[index]!
    decisions.push(o.decision)
    const tool = o.tool === null ? null : (tools.resolve(o.tool) ?? null)
    if (!o.ok) {
      const rejected: RejectedCall = { ok: false, index, id, requestedName, tool, reason: o.reason, message: o.message, arguments: o.arguments }
      outcomes.push(rejected)
    } else if (tool === null) {
      outcomes.push({ ok: false, index, id, requestedName, tool: null, reason: 'unknown_tool', message: `the tool ${o.tool} was removed while the batch waited`, arguments: o.arguments })
    } else {
      const prepared: PreparedCall = { ok: true, index, id, requestedName, tool, arguments: o.arguments, conflictKey: o.conflictKey }
      outcomes.push(prepared)
    }
  })
  return { outcomes, decisions, events: w.events }
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
