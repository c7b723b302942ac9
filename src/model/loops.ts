/** The loop detectors' slice of a run's record (SPEC section 15): their kinds, limits and state. */

/**
 * The loop detectors (SPEC section 15), by the names metrics, summaries and
 * events give them; `exact` is section 6's. The figures (the metric's
 * labels, the summaries' and a run's counts) are made from this list.
 */
export const LOOP_KINDS = ['exact', 'cycle', 'errors', 'no_progress'] as const
export type LoopKind = typeof LOOP_KINDS[number]

/** The detectors beyond exact repeats (whose figures are a run's repeat counts): a run counts their detections in `loops`. */
export type StreakKind = Exclude<LoopKind, 'exact'>
export const STREAK_KINDS: readonly StreakKind[] = LOOP_KINDS.filter((k): k is StreakKind => k !== 'exact')

/** The limits of the three detectors beyond exact repeats, as a run's `limits` holds them. */
export interface LoopLimits {
  readonly cycleAdvisoryRepetitions: number
  readonly cycleTerminationRepetitions: number
  readonly consecutiveErrorAdvisory: number
  readonly consecutiveErrorTermination: number
  readonly noProgressAdvisory: number
  readonly noProgressTermination: number
}

/**
 * A run's loop state beside its exact-repeat streak. `resets` counts
 * `POST .../messages`: a batch that finishes after a message it did not
 * start from leaves the streaks the message reset alone.
 */
export interface LoopState {
  cycle: CycleState
  errors: ErrorStreak
  noProgress: NoProgressStreak
  resets: number
}

/** A tracked call as the cycle detector remembers it. */
export interface CycleCall {
  fingerprint: string
  /** The tool's name, for the policy message. */
  tool: string
  /** The tool's `trackExactRepeats` (default true): an untracked call neither advances nor resets a cycle. */
  tracked?: boolean
}

/** One period's streak: how many calls in a row equalled the call one period before them. */
export interface PeriodStreak {
  matched: number
  /** Whether this streak already produced its one advisory. */
  advised: boolean
}

/** A run's cycle state: the last tracked calls and one streak per period (2, then 3). */
export interface CycleState {
  recent: CycleCall[]
  periods: PeriodStreak[]
}

/** A run's streak of failing calls. */
export interface ErrorStreak {
  count: number
  /** Whether this streak already produced its one advisory. */
  advised: boolean
  /** The distinct tools of the streak's latest failures, oldest first (at most three). */
  tools: string[]
}

/** A run's streak of identical answers to one exempt call. */
export interface NoProgressStreak {
  /** The streak's call and answer: its fingerprint and a hash of its content; null when there is none. */
  key: string | null
  tool: string | null
  count: number
  /** Whether this streak already produced its one advisory. */
  advised: boolean
}
