/**
 * The batch's answer, in one place: the 200 once it completed, with the
 * run as its final update left it (`messages` in the provider format the
 * calls came in), or the 202 of a batch a guard held, as that guard made
 * it (the same body a resend and the batch resource answer meanwhile).
 */
import { renderMessages } from '../formats/index.js'
import type { Held } from '../guards/types.js'
import type { BatchResponse } from '../model/result.js'
import type { RunRecord, TerminationReason } from '../model/run.js'
import type { BatchRuntime } from './runtime.js'
import type { BatchState } from './state.js'

/** How the batch left its run. */
export interface Closing {
  state: RunRecord['state']
  terminationReason: TerminationReason | null
  terminatedNow: boolean
}

/** The run was gone when the batch finished. */
export const GONE: Closing = { state: 'ended', terminationReason: 'ended', terminatedNow: false }

/** The batch's answer as JSON text: completed, the run as `closing` left it, or held. */
export function respond (state: BatchState, rt: BatchRuntime, to: { closing: Closing } | { held: Held }): string {
  if ('held' in to) return JSON.stringify(to.held.body)
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
    run: closing.terminationReason === null ? { state: closing.state } : { state: closing.state, terminationReason: closing.terminationReason }
  }
  if (state.format !== undefined) response.messages = renderMessages(state.format, state.results, state.policyMessages, state.calls)
  return JSON.stringify(response)
}
