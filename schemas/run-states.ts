import type { RuleTerminationReason, RunState } from '../src/model/run.js'
import type { BatchEvent } from '../src/model/result.js'
import { LOOP_KIND_LIST } from '../src/repeat/kinds/index.js'
import type { LoopKinds } from '../src/repeat/loops.js'

/**
 * The enums the API documents, listed once at run time. Each list is held
 * complete against its type: adding a state, reason or event type without
 * listing it here fails the typecheck, so the OpenAPI document cannot fall
 * behind. The loop kinds' termination reasons come from their list.
 */

export const RUN_STATES = ['active', 'terminated', 'cancelled', 'ended'] as const satisfies readonly RunState[]

/** The reasons of the run's own rules, after exact repeats' (and the loop kinds' after that). */
const RULE_REASONS = ['max_turns', 'max_tool_calls', 'max_total_tokens', 'timeout', 'projection_failed', 'cancelled', 'ended'] as const satisfies readonly RuleTerminationReason[]

/** Every termination reason: exact repeats', each loop kind's in the kinds' order, then the rules'. */
export function terminationReasons (kinds: LoopKinds): readonly string[] {
  return Object.freeze(['exact_repeat', ...kinds.map((k) => k.reason), ...RULE_REASONS])
}

export const TERMINATION_REASONS = terminationReasons(LOOP_KIND_LIST)

export const EVENT_TYPES = [
  'batch.started', 'epoch.started', 'call.started', 'call.progress', 'call.completed', 'epoch.settled', 'tool.repeat_detected', 'run.terminated', 'batch.completed',
  'batch.awaiting_approval', 'call.awaiting_approval', 'call.approved', 'call.denied'
] as const satisfies ReadonlyArray<BatchEvent['type']>

type Complete<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : { missing: Exclude<All, Listed> }
export const listsAreComplete: [
  Complete<RunState, typeof RUN_STATES[number]>,
  Complete<RuleTerminationReason, 'exact_repeat' | typeof RULE_REASONS[number]>,
  Complete<BatchEvent['type'], typeof EVENT_TYPES[number]>
] = [true, true, true]
