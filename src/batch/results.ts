import type { PreparedCall, RejectedCall } from '../prepare/types.js'
import type { CallResult } from './types.js'
import { CANCELLED_MESSAGE, CLOSED_MESSAGE, blockedMessage, errorContent } from './content.js'

type AnyCall = PreparedCall | RejectedCall

function named (call: AnyCall): { callId: string, name: string } {
  return { callId: call.id, name: call.requestedName }
}

function withTool (call: AnyCall, details: CallResult['details']): CallResult['details'] {
  if (call.tool !== null && call.tool.name !== call.requestedName) details.tool = call.tool.name
  return details
}

/** A call refused by preparation. */
export function rejectedResult (call: RejectedCall): CallResult {
  return {
    ...named(call),
    status: 'rejected',
    content: errorContent(call.reason, call.message),
    isError: true,
    details: withTool(call, { reason: call.reason, message: call.message })
  }
}

const TERMINATED_MESSAGES = {
  exact_repeat: 'Not run: the agent repeated the same call with identical arguments too many times in a row, so the run was stopped.',
  max_tool_calls: 'Not run: the run reached its limit of tool calls and was stopped.',
  repeat_cycle: 'Not run: the agent kept going round the same cycle of calls with identical arguments, so the run was stopped.',
  consecutive_errors: 'Not run: too many tool calls in a row failed, so the run was stopped.',
  no_progress: 'Not run: the agent kept calling a tool that answered the same thing every time, so the run was stopped.'
} as const

/** A call not dispatched because the run ended (a loop detector or a run limit). */
export function terminatedResult (call: AnyCall, reason: keyof typeof TERMINATED_MESSAGES): CallResult {
  return {
    ...named(call),
    status: 'terminated',
    content: errorContent('terminated', TERMINATED_MESSAGES[reason], { reason }),
    isError: true,
    details: withTool(call, { reason })
  }
}

/** A call that never started. `reason` says why: cancelled, timeout, client_gone, batch_closed, run_not_active. */
export function cancelledResult (call: AnyCall, reason: string, epoch?: number): CallResult {
  const details: CallResult['details'] = { reason }
  if (epoch !== undefined) details.epoch = epoch
  return {
    ...named(call),
    status: 'cancelled',
    content: errorContent('cancelled', reason === 'batch_closed' ? CLOSED_MESSAGE : CANCELLED_MESSAGE),
    isError: true,
    details: withTool(call, details)
  }
}

/** A write not dispatched because an earlier write's outcome is unknown. */
export function blockedResult (call: AnyCall, blockedBy: string, epoch: number): CallResult {
  return {
    ...named(call),
    status: 'blocked',
    content: errorContent('blocked', blockedMessage(blockedBy), { blockedBy }),
    isError: true,
    details: withTool(call, { epoch, blockedBy, reason: 'uncertain_write' })
  }
}
