/**
 * The errors loop kind (SPEC section 15): tool calls failing in a row, the
 * model retrying variations of what does not work.
 */
import { type LoopThresholds, type ResultsLoopKind, type StreakDecision, NO_DECISION, assertThresholds, boundedMessage, decide } from '../loops.js'

/** A run's streak of failing calls. */
export interface ErrorStreak {
  count: number
  /** Whether this streak already produced its one advisory. */
  advised: boolean
  /** The distinct tools of the streak's latest failures, oldest first (at most three). */
  tools: string[]
}

/** The most tool names an error streak keeps for its policy message. */
const MAX_TOOLS = 3

/** What the error detector reads of a settled call. */
export interface FailedCall {
  status: string
  /** Canonical tool name, or the requested one when none resolved. */
  tool: string
}

/**
 * How a call's status moves the error streak (SPEC section 15): `error` and
 * `rejected` count; `ok` resets; every other status (`denied`, `blocked`,
 * `uncertain`, `cancelled`, `terminated`, `projection_failed`) does
 * neither: those say nothing about whether the model's calls work (a
 * person declined, an earlier write is unknown, the run stopped it), and an
 * uncertain write may well have succeeded.
 */
export function errorEffect (status: string): 'count' | 'reset' | 'skip' {
  if (status === 'error' || status === 'rejected') return 'count'
  if (status === 'ok') return 'reset'
  return 'skip'
}

/** One settled call, in source order: the next streak and what it asks. */
export function stepErrors (streak: ErrorStreak, call: FailedCall, t: LoopThresholds): { streak: ErrorStreak, decision: StreakDecision } {
  assertThresholds(t)
  switch (errorEffect(call.status)) {
    case 'skip':
      return { streak, decision: NO_DECISION }
    case 'reset':
      return { streak: streak.count === 0 ? streak : { count: 0, advised: false, tools: [] }, decision: NO_DECISION }
    case 'count': {
      const count = streak.count + 1
      const tools = streak.tools.filter((name) => name !== call.tool)
      tools.push(call.tool)
      if (tools.length > MAX_TOOLS) tools.shift()
      const { decision, advised } = decide(count, streak.advised, t)
      return { streak: { count, advised, tools }, decision }
    }
  }
}

/** The advisory of an error streak: the failing tools and how many calls failed in a row. */
export function errorsMessage (tools: readonly string[], count: number): string {
  return boundedMessage(tools, count, (names) =>
    `Loop detected (errors): your last ${count} tool calls in a row failed (${names.map((n) => `"${n}"`).join(', ')}). ` +
    'Read the error messages and fix their cause instead of retrying variations of the same call, ' +
    'or stop and tell the user what is blocking you.')
}

export const errorsKind: ResultsLoopKind<ErrorStreak> = {
  name: 'errors',
  reason: 'consecutive_errors',
  stateKey: 'errors',
  limits: {
    advisory: {
      name: 'consecutiveErrorAdvisory',
      env: 'TOOLGATE_CONSECUTIVE_ERROR_ADVISORY',
      default: 3,
      help: 'Default of consecutiveErrorAdvisory: failed calls in a row (error or rejected) that give an advisory; 0 disables.'
    },
    termination: {
      name: 'consecutiveErrorTermination',
      env: 'TOOLGATE_CONSECUTIVE_ERROR_TERMINATION',
      default: 10,
      help: 'Default of consecutiveErrorTermination: failed calls in a row that terminate the run (consecutive_errors); 0 disables.'
    }
  },
  terminated: 'Not run: too many tool calls in a row failed, so the run was stopped.',
  reads: 'results',
  initial: () => ({ count: 0, advised: false, tools: [] }),
  step (state, call, t) {
    const { streak, decision } = stepErrors(state, call, t)
    return { state: streak, hit: decision.action === 'none' ? null : { decision, message: (n) => errorsMessage(streak.tools, n) } }
  }
}
