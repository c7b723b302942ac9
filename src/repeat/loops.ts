import type { LoopKind, LoopLimits, LoopState } from '../model/loops.js'

/** The termination reason of each kind. */
export const LOOP_TERMINATION_REASONS = {
  exact: 'exact_repeat',
  cycle: 'repeat_cycle',
  errors: 'consecutive_errors',
  no_progress: 'no_progress'
} as const

export type LoopTerminationReason = (typeof LOOP_TERMINATION_REASONS)[LoopKind]

/** The limits a run gets when neither it nor the server says otherwise. */
export const DEFAULT_LOOP_LIMITS: LoopLimits = Object.freeze({
  cycleAdvisoryRepetitions: 3,
  cycleTerminationRepetitions: 6,
  consecutiveErrorAdvisory: 3,
  consecutiveErrorTermination: 10,
  noProgressAdvisory: 10,
  noProgressTermination: 30
})

/** The loop state of a new run. */
export function initialLoopState (): LoopState {
  return {
    cycle: { recent: [], periods: [{ matched: 0, advised: false }, { matched: 0, advised: false }] },
    errors: { count: 0, advised: false, tools: [] },
    noProgress: { key: null, tool: null, count: 0, advised: false },
    resets: 0
  }
}

/** After a genuine user message: every streak starts over. */
export function resetLoopState (previous: LoopState | undefined): LoopState {
  const next = initialLoopState()
  next.resets = (previous?.resets ?? 0) + 1
  return next
}

/**
 * The run's loop state; a record stored before the detectors existed (a
 * shared store outlives a deploy) has none and starts from nothing.
 */
export function loopStateOf (run: { loops?: LoopState }): LoopState {
  return run.loops ?? initialLoopState()
}

/** The run's loop limits, the defaults filling what an older record lacks. */
export function loopLimitsOf (limits: Partial<LoopLimits>): LoopLimits {
  return {
    cycleAdvisoryRepetitions: limits.cycleAdvisoryRepetitions ?? DEFAULT_LOOP_LIMITS.cycleAdvisoryRepetitions,
    cycleTerminationRepetitions: limits.cycleTerminationRepetitions ?? DEFAULT_LOOP_LIMITS.cycleTerminationRepetitions,
    consecutiveErrorAdvisory: limits.consecutiveErrorAdvisory ?? DEFAULT_LOOP_LIMITS.consecutiveErrorAdvisory,
    consecutiveErrorTermination: limits.consecutiveErrorTermination ?? DEFAULT_LOOP_LIMITS.consecutiveErrorTermination,
    noProgressAdvisory: limits.noProgressAdvisory ?? DEFAULT_LOOP_LIMITS.noProgressAdvisory,
    noProgressTermination: limits.noProgressTermination ?? DEFAULT_LOOP_LIMITS.noProgressTermination
  }
}
