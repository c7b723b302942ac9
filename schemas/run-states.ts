import type { RunState, TerminationReason } from '../src/model/run.js'
import type { BatchEvent } from '../src/model/result.js'

/**
 * The enums the API documents, listed once at run time. Each list is held
 * complete against its type: adding a state, reason or event type without
 * listing it here fails the typecheck, so the OpenAPI document cannot fall
 * behind.
 */

export const RUN_STATES = ['active', 'terminated', 'cancelled', 'ended'] as const satisfies readonly RunState[]

export const TERMINATION_REASONS = [
  'exact_repeat', 'repeat_cycle', 'consecutive_errors', 'no_progress', 'max_turns', 'max_tool_calls', 'max_total_tokens', 'timeout', 'projection_failed', 'cancelled', 'ended'
] as const satisfies readonly TerminationReason[]

export const EVENT_TYPES = [
  'batch.started', 'epoch.started', 'call.started', 'call.progress', 'call.completed', 'epoch.settled', 'tool.repeat_detected', 'run.terminated', 'batch.completed',
  'batch.awaiting_approval', 'call.awaiting_approval', 'call.approved', 'call.denied'
] as const satisfies ReadonlyArray<BatchEvent['type']>

type Complete<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : { missing: Exclude<All, Listed> }
export const listsAreComplete: [
  Complete<RunState, typeof RUN_STATES[number]>,
  Complete<TerminationReason, typeof TERMINATION_REASONS[number]>,
  Complete<BatchEvent['type'], typeof EVENT_TYPES[number]>
] = [true, true, true]
