/**
 * The no_progress loop kind (SPEC section 15): an exempt tool (one that
 * does not track exact repeats, as a status poll) answering the same thing
 * to the same call again and again.
 */
import { type LoopThresholds, type ResultsLoopKind, type StreakDecision, NO_DECISION, assertThresholds, boundedMessage, decide } from '../loops.js'
import { sha256 } from '../../model/sha256.js'

/** A run's streak of identical answers to one exempt call. */
export interface NoProgressStreak {
  /** The streak's call and answer: its fingerprint and a hash of its content; null when there is none. */
  key: string | null
  tool: string | null
  count: number
  /** Whether this streak already produced its one advisory. */
  advised: boolean
}

/** What the no-progress detector reads of a settled call. */
export interface AnsweredCall {
  status: string
  tool: string
  /** The tool's `trackExactRepeats`: only exempt tools' calls form a streak. */
  tracked: boolean
  fingerprint: string
  content: string
}

/** Statuses of calls that reached their executor and answered (or may have). */
const RAN = new Set(['ok', 'error', 'uncertain'])

/**
 * One settled call, in source order (SPEC section 15). A streak is calls in
 * a row of one exempt tool with the same fingerprint and the same content:
 * polling that keeps answering the same thing. A call that ran and differs
 * in any way (another tool, a tracked tool, other arguments, another
 * answer) starts over; a call that did not run (rejected, denied, blocked,
 * cancelled, terminated) neither advances nor resets it: it tells nothing
 * about whether the polled state moved.
 */
export function stepNoProgress (streak: NoProgressStreak, call: AnsweredCall, t: LoopThresholds): { streak: NoProgressStreak, decision: StreakDecision } {
  assertThresholds(t)
  if (!RAN.has(call.status)) return { streak, decision: NO_DECISION }
  if (call.tracked) {
    return { streak: streak.key === null ? streak : { key: null, tool: null, count: 0, advised: false }, decision: NO_DECISION }
  }
  const key = `${call.fingerprint}:${sha256(call.content, 'base64url').slice(0, 22)}`
  const same = key === streak.key
  const count = same ? streak.count + 1 : 1
  const { decision, advised } = decide(count, same && streak.advised, t)
  return { streak: { key, tool: call.tool, count, advised }, decision }
}

/** The advisory of polling that makes no progress: the tool and how many identical answers. */
export function noProgressMessage (tool: string, count: number): string {
  return boundedMessage([tool], count, ([name]) =>
    `Loop detected (no_progress): you have called the tool "${name}" ${count} times in a row with the same arguments ` +
    'and it returned the same result every time. Nothing is changing: stop polling, try something else, ' +
    'or tell the user what you are waiting for.')
}

export const noProgressKind: ResultsLoopKind<NoProgressStreak> = {
  name: 'no_progress',
  reason: 'no_progress',
  stateKey: 'noProgress',
  limits: {
    advisory: {
      name: 'noProgressAdvisory',
      env: 'TOOLGATE_NO_PROGRESS_ADVISORY',
      default: 10,
      help: 'Default of noProgressAdvisory: identical answers in a row to one exempt call that give an advisory; 0 disables.'
    },
    termination: {
      name: 'noProgressTermination',
      env: 'TOOLGATE_NO_PROGRESS_TERMINATION',
      default: 30,
      help: 'Default of noProgressTermination: identical answers in a row that terminate the run (no_progress); 0 disables.'
    }
  },
  terminated: 'Not run: the agent kept calling a tool that answered the same thing every time, so the run was stopped.',
  reads: 'results',
  initial: () => ({ key: null, tool: null, count: 0, advised: false }),
  step (state, call, t) {
    const { streak, decision } = stepNoProgress(state, call, t)
    return { state: streak, hit: decision.action === 'none' ? null : { decision, message: (n) => noProgressMessage(call.tool, n) } }
  }
}
