/**
 * The run's call budget (SPEC section 3, `maxToolCalls`): admission cuts a
 * batch where the budget runs out, terminating the run there, and counts
 * the calls admitted before the cut (whichever guard made it).
 */
import type { RunLimits } from '../model/run.js'
import type { AdmissionScope, BatchGuard, Guard } from './types.js'

const NAME = 'limits'

/** How many of `size` calls fit the budget, `soFar` having been admitted. */
export function budgetOf (limits: Pick<RunLimits, 'maxToolCalls'>, soFar: number, size: number): number {
  return limits.maxToolCalls === null ? size : Math.min(size, Math.max(0, limits.maxToolCalls - soFar))
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

export const limitsGuard: Guard = { name: NAME, open: () => batchGuard, stops: STOPS }
