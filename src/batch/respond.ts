/**
 * The batch's answer, in one place, from its state: the 200 once it
 * completed, with the run as its final update left it (`messages` in the
 * provider format the calls came in), or the 202 of a batch held for
 * approvals: its rejections and the calls waiting for a decision, as its
 * stored form shows them. A resend and the batch resource answer the same
 * 202 meanwhile, from the state loaded from the run (`loadState`).
 */
import { renderMessages } from '../formats/index.js'
import type { PendingApproval } from '../approvals/types.js'
import { pendingApprovals } from '../approvals/waiting.js'
import type { Held } from '../guards/types.js'
import type { BatchEvent, BatchResponse, CallResult } from '../model/result.js'
import { rejectedResult } from '../model/results.js'
import type { RunRecord, TerminationReason } from '../model/run.js'
import type { BatchRuntime } from './runtime.js'
import type { BatchState } from './state.js'
import { storedState } from './stored-state.js'

/** How the batch left its run. */
export interface Closing {
  state: RunRecord['state']
  terminationReason: TerminationReason | null
  terminatedNow: boolean
}

/** The run was gone when the batch finished. */
export const GONE: Closing = { state: 'ended', terminationReason: 'ended', terminatedNow: false }

/** Where a held batch waits: its waiting batch's times, and its run as last read. */
export type Waiting = Pick<Held, 'waiting' | 'run'>

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

/**
 * The batch's answer as JSON text: completed, the run as `closing` left it
 * (the events `rt` recorded), or held, waiting as `held` says (the events
 * its approvals keep; a batch answered while it waits has no runtime).
 */
export function respond (state: BatchState, rt: Pick<BatchRuntime, 'recorder'> | null, to: { closing: Closing } | { held: Waiting }): string {
  if ('held' in to) return JSON.stringify(awaiting(state, to.held))
  if (rt === null) throw new Error(`batch ${state.batchId} is answered completed without its runtime`)
  const { closing } = to
  const response: BatchResponse = {
    runId: state.runId,
    batchId: state.batchId,
    turn: state.turn,
    state: 'completed',
    results: state.results,
    events: rt.recorder.events,
    policyMessages: state.policyMessages,
    continue: closing.state === 'active' && !state.closed,
    run: runOf(closing)
  }
  if (state.format !== undefined) response.messages = renderMessages(state.format, state.results, state.policyMessages, state.calls)
  return JSON.stringify(response)
}

function awaiting (state: BatchState, { waiting, run }: Waiting): AwaitingResponse {
  const { approvals, prepared } = state
  if (approvals === undefined || prepared === undefined) throw new Error(`batch ${state.batchId} is answered as held, but holds nothing`)
  const results: CallResult[] = []
  for (const o of prepared.outcomes) if (!o.ok) results.push(rejectedResult(o))
  return {
    runId: state.runId,
    batchId: state.batchId,
    turn: state.turn,
    state: 'awaiting_approval',
    results,
    approvals: pendingApprovals({ state: storedState(state, approvals), requestedAt: waiting.requestedAt, expiresAt: waiting.expiresAt }, run.uncertain),
    events: approvals.events,
    policyMessages: [],
    continue: true,
    run: runOf(run)
  }
}

/** The run as an answer shows it. */
function runOf (run: Pick<RunRecord, 'state' | 'terminationReason'>): { state: RunRecord['state'], terminationReason?: TerminationReason } {
  return run.terminationReason === null ? { state: run.state } : { state: run.state, terminationReason: run.terminationReason }
}
