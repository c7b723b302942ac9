/**
 * The cycle loop kind (SPEC section 15): the same two or three calls over
 * and over (A B A B…, A B C A B C…), each time with identical arguments.
 */
import { type CallsLoopKind, type LoopThresholds, type StreakDecision, assertThresholds, boundedMessage, decide } from '../loops.js'

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

/** The periods a cycle may have: A B A B… and A B C A B C…. */
const CYCLE_PERIODS = [2, 3] as const

/** The most recent tracked calls a cycle looks back on: one period of the longest. */
const MEMORY = 3

/** A cycle found at one call: its period, the tools of one repetition in order, and the decision. */
export interface CycleHit {
  period: number
  /** Tool names of the repetition that ends at this call, oldest first. */
  tools: string[]
  decision: Exclude<StreakDecision, { action: 'none' }>
}

export interface CycleOutcome {
  state: CycleState
  /** One per call, null where no cycle decided anything. */
  hits: Array<CycleHit | null>
  /** Index of the call that completed the termination repetition, or null. */
  terminatedAt: number | null
}

/**
 * Walks a batch's tracked calls in source order (SPEC section 15), from the
 * run's state. A call extends a period-p streak when it equals the tracked
 * call p calls before it and the last p calls are not all one call (that is
 * an exact repeat, section 6's business). A streak of `matched` calls
 * spans `matched + p` calls: `floor((matched + p) / p)` whole repetitions of
 * the cycle, and a cycle exists from two repetitions on (so limits below 2
 * act as 2). The call that completes the advisory repetition is still
 * dispatched; the one that completes the termination repetition is not,
 * and the walk stops there. Untracked calls neither advance nor reset
 * anything.
 */
export function trackCycles (state: CycleState, calls: readonly CycleCall[], t: LoopThresholds): CycleOutcome {
  assertThresholds(t)
  const recent = state.recent.slice()
  const periods = state.periods.map((p) => ({ ...p }))
  const hits: Array<CycleHit | null> = []
  let terminatedAt: number | null = null
  for (let index = 0; index < calls.length; index++) {
    const call = calls[index]!
    if (terminatedAt !== null || call.tracked === false) {
      hits.push(null)
      continue
    }
    let hit: CycleHit | null = null
    for (let k = 0; k < CYCLE_PERIODS.length; k++) {
      const period = CYCLE_PERIODS[k]!
      const streak = periods[k] ?? (periods[k] = { matched: 0, advised: false })
      if (continuesCycle(recent, call, period)) {
        streak.matched++
      } else {
        streak.matched = 0
        streak.advised = false
        continue
      }
      const repetitions = Math.floor((streak.matched + period) / period)
      if (repetitions < 2) continue
      const { decision, advised } = decide(repetitions, streak.advised, t)
      streak.advised = advised
      // Two periods can never both hold two repetitions (that would make the calls all one).
      if (decision.action !== 'none') {
        hit = { period, tools: [...recent.slice(recent.length - period + 1).map((c) => c.tool), call.tool], decision }
      }
    }
    recent.push({ fingerprint: call.fingerprint, tool: call.tool })
    if (recent.length > MEMORY) recent.shift()
    hits.push(hit)
    if (hit?.decision.action === 'terminate') terminatedAt = index
  }
  return { state: { recent, periods }, hits, terminatedAt }
}

/** Whether `call` continues a period-`period` cycle over `recent`. */
function continuesCycle (recent: readonly CycleCall[], call: CycleCall, period: number): boolean {
  if (recent.length < period) return false
  if (recent[recent.length - period]!.fingerprint !== call.fingerprint) return false
  // The window of the last `period` calls, this one included, must hold two different calls.
  for (let i = recent.length - period + 1; i < recent.length; i++) {
    if (recent[i]!.fingerprint !== call.fingerprint) return true
  }
  return false
}

/** The advisory of a cycle: the tools of one repetition in order and how many repetitions, never the arguments. */
export function cycleMessage (tools: readonly string[], repetitions: number): string {
  return boundedMessage(tools, repetitions, (names) =>
    `Loop detected (cycle): you have repeated the same sequence of ${tools.length} tool calls (${names.map((n) => `"${n}"`).join(' → ')}) ` +
    `${repetitions} times in a row, each time with identical arguments. Going round again will not give a different result. ` +
    'Change your approach (different arguments or a different tool) or stop and tell the user what is blocking you.')
}

export const cycleKind: CallsLoopKind<CycleState> = {
  name: 'cycle',
  reason: 'repeat_cycle',
  stateKey: 'cycle',
  limits: {
    advisory: {
      name: 'cycleAdvisoryRepetitions',
      env: 'TOOLGATE_CYCLE_ADVISORY_REPETITIONS',
      default: 3,
      help: 'Default of the run limit cycleAdvisoryRepetitions: whole repetitions of a 2- or 3-call cycle that give an advisory; 0 disables.'
    },
    termination: {
      name: 'cycleTerminationRepetitions',
      env: 'TOOLGATE_CYCLE_TERMINATION_REPETITIONS',
      default: 6,
      help: 'Default of cycleTerminationRepetitions: repetitions of a cycle that terminate the run (repeat_cycle); 0 disables.'
    }
  },
  terminated: 'Not run: the agent kept going round the same cycle of calls with identical arguments, so the run was stopped.',
  reads: 'calls',
  initial: () => ({ recent: [], periods: [{ matched: 0, advised: false }, { matched: 0, advised: false }] }),
  walk (state, calls, t) {
    const walked = trackCycles(state, calls, t)
    // Most batches find no cycle: their hits (all null) are handed on as they are.
    if (walked.terminatedAt === null && walked.hits.every((hit) => hit === null)) return { state: walked.state, hits: walked.hits as null[] }
    return { state: walked.state, hits: walked.hits.map((hit) => hit === null ? null : { decision: hit.decision, message: (n: number) => cycleMessage(hit.tools, n) }) }
  }
}
