/**
 * What a batch held for approvals answers while it waits (SPEC section 13):
 * the batch request's 202, a resend's, the batch resource's. The hold
 * itself is the approvals guard (src/guards/approvals.ts), which the batch's hold phase calls.
 */
import { type BatchEvent, type CallResult } from '../model/result.js'
import { rejectedResult } from '../model/results.js'
import type { RunRecord } from '../model/run.js'
import type { Tool } from '../model/tool.js'
import type { PendingApproval } from './types.js'
import type { WaitingBatch } from '../model/waiting.js'
import { pendingApprovals } from './waiting.js'

/** The answer to a batch while it waits: section 4's answer with `state`, the rejections and the pending approvals. */
export interface AwaitingResponse {
  runId: string
  batchId: string
  turn: number
  state: 'awaiting_approval'
  results: CallResult[]
  approvals: PendingApproval[]
  events: BatchEvent[]
  policyMessages: []
  continue: true
  run: { state: string, terminationReason?: string }
}

/** A run's batch `batchId` as it stands while it waits for approvals; undefined when it does not wait. */
export function awaitingView (run: RunRecord, batchId: string): AwaitingResponse | undefined {
  const w = run.waiting
  return w?.batchId === batchId && w.phase === 'awaiting' ? awaitingResponse(run.runId, w, run) : undefined
}

/** The answer of a waiting batch as it stands: the batch request's 202, a resend's, the batch resource's. */
export function awaitingResponse (runId: string, w: WaitingBatch, run: Pick<RunRecord, 'state' | 'terminationReason'> & { uncertain?: RunRecord['uncertain'] }): AwaitingResponse {
  const results: CallResult[] = []
  w.outcomes.forEach((o, index) => {
    if (o.ok) return
    const { id, name: requestedName } = w.calls[index]!
    // Only the name of the tool shows in a rejection's result.
    const tool = o.tool === null ? null : { name: o.tool } as Tool
    results.push(rejectedResult({ id, requestedName, tool, reason: o.reason, message: o.message }))
  })
  return {
    runId,
    batchId: w.batchId,
    turn: w.turn,
    state: 'awaiting_approval',
    results,
    approvals: pendingApprovals(w, run.uncertain),
    events: w.events,
    policyMessages: [],
    continue: true,
    run: run.terminationReason === null ? { state: run.state } : { state: run.state, terminationReason: run.terminationReason }
  }
}
