/**
 * The loop detectors' slice of a run's record (SPEC section 15): their
 * names, limits and state. The kinds beyond exact repeats are registered in
 * src/repeat/kinds/, each with its own state and limits, so this names none.
 */

/** A loop kind's name in metrics, summaries and events: `exact` (section 6's), or a registered kind's. */
export type LoopKind = string

/** A registered loop kind's termination reason (src/repeat/kinds/): its name in a run's `terminationReason`. */
export type LoopTerminationReason = string

/** The limits of the loop kinds beyond exact repeats, by their names, as a run's `limits` holds them. */
export type LoopLimits = Readonly<Record<string, number>>

/**
 * A run's loop state beside its exact-repeat streak: each registered kind's
 * state under its `stateKey`. `resets` counts `POST .../messages`: a batch
 * that finishes after a message it did not start from leaves the streaks
 * the message reset alone.
 */
export interface LoopState {
  resets: number
  [stateKey: string]: unknown
}
