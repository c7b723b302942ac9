/**
 * What every loop detector shares (SPEC section 15): its two limits and how a
 * streak's count turns into a decision. The detectors import this; the run's
 * loop state (loops.ts) imports their state types.
 */

/** A detector's two limits; 0 disables that action. */
export interface LoopThresholds {
  advisory: number
  termination: number
}

/** What a streak asks of one call. */
export type StreakDecision =
  | { action: 'none' }
  | { action: 'advisory', count: number }
  | { action: 'terminate', count: number }

export const NO_DECISION: StreakDecision = Object.freeze({ action: 'none' })

/**
 * The shared shape of every detector: termination is checked before the
 * advisory (equal limits terminate), `>=` so a stored streak can never slip
 * past a limit, and one advisory per streak.
 */
export function decide (count: number, advised: boolean, t: LoopThresholds): { decision: StreakDecision, advised: boolean } {
  if (t.termination > 0 && count >= t.termination) return { decision: { action: 'terminate', count }, advised }
  if (t.advisory > 0 && count >= t.advisory && !advised) return { decision: { action: 'advisory', count }, advised: true }
  return { decision: NO_DECISION, advised }
}

/** Throws a TypeError naming the limit that is not a non-negative integer; checked at every step, so it allocates nothing. */
export function assertThresholds (t: LoopThresholds): void {
  assertThreshold('advisory', t.advisory)
  assertThreshold('termination', t.termination)
}

function assertThreshold (name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`Expected \`thresholds.${name}\` to be a non-negative integer, got ${String(value)}`)
  }
}
