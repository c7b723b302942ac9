import { type LoopThresholds, type StreakDecision, NO_DECISION, assertThresholds, decide } from './streak.js'
import type { ErrorStreak } from '../model/loops.js'

/** The most tool names an error streak keeps for its policy message. */
const MAX_TOOLS = 3

/** What the error detector reads of a settled call. */
export interface SettledCall {
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
export function stepErrors (streak: ErrorStreak, call: SettledCall, t: LoopThresholds): { streak: ErrorStreak, decision: StreakDecision } {
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
