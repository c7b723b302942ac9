import { type LoopThresholds, type StreakDecision, NO_DECISION, assertThresholds, decide } from './streak.js'
import { sha256 } from '../model/sha256.js'
import type { NoProgressStreak } from '../model/loops.js'

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
