/**
 * The run limits (SPEC sections 3 and 6) as one guard. As a batch starts
 * (`startTurn`, inside the update that takes the run's lease): a run past
 * its `timeoutMs`, or that the batch would take past `maxTurns` or
 * `maxTotalTokens`, is terminated with that reason and the batch answered
 * `run_not_active`. At admission: the call budget (`maxToolCalls`) cuts a
 * batch where it runs out, terminating the run there, and the calls
 * admitted before the cut are counted (whichever guard made it). The
 * deadline while a batch runs is src/runs/deadline.ts's.
 */
import type { RunLimits, RunRecord, TerminationReason } from '../model/run.js'
import { deadlinePassed } from '../runs/deadline.js'
import type { AdmissionScope, BatchGuard, Guard, TurnStart } from './types.js'

const NAME = 'limits'

/** How many of `size` calls fit the budget, `soFar` having been admitted. */
export function budgetOf (limits: Pick<RunLimits, 'maxToolCalls'>, soFar: number, size: number): number {
  return limits.maxToolCalls === null ? size : Math.min(size, Math.max(0, limits.maxToolCalls - soFar))
}

/** The limit a new batch of the run would pass, checked before the run counts the batch's turn and tokens: the deadline first. */
export function startLimit (run: RunRecord, turn: TurnStart): TerminationReason | null {
  const { limits } = run.options
  if (deadlinePassed(run, turn.now)) return 'timeout'
  if (limits.maxTurns !== null && run.counters.turns + 1 > limits.maxTurns) return 'max_turns'
  if (limits.maxTotalTokens !== null && run.counters.totalTokens + turn.tokens > limits.maxTotalTokens) return 'max_total_tokens'
  return null
}

const batchGuard: BatchGuard = {
  admit (scope: AdmissionScope): void {
    const { run, start } = scope
    const soFar = (start.toolCalls ??= run.counters.toolCalls)
    const size = scope.batch.outcomes.length
    const budget = budgetOf(run.options.limits, soFar, size)
    if (budget < size) scope.terminate(budget, 'max_tool_calls', NAME)
  },
  count (scope: AdmissionScope): void {
    // Only calls before the termination point count as admitted.
    scope.run.counters.toolCalls = (scope.start.toolCalls ?? 0) + scope.cut
  }
}

const STOPS = Object.freeze({ max_tool_calls: 'Not run: the run reached its limit of tool calls and was stopped.' })

export const limitsGuard: Guard = { name: NAME, open: () => batchGuard, startTurn: startLimit, stops: STOPS }
