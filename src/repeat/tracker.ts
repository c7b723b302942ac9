import type { LoopThresholds, StreakDecision } from './streak.js'
import type { RepeatState } from '../model/run.js'

/** The run's thresholds; 0 disables the corresponding action. */
export type RepeatThresholds = LoopThresholds

/**
 * One call of a batch, in source order. `tracked` is the tool's
 * `trackExactRepeats`; a rejected call of an unknown tool is tracked.
 */
export interface TrackedCall {
  fingerprint: string
  tracked: boolean
}

/** What the repeat policy asks of one call: a streak's decision, as every loop detector's. */
export type RepeatDecision = StreakDecision

/** The outcome of walking one batch: the state to store and one decision per call. */
export interface RepeatOutcome {
  state: RepeatState
  decisions: RepeatDecision[]
  /** Index of the call that reached the termination threshold, or null. */
  terminatedAt: number | null
}

/** The state of a new run, and after a genuine user message. */
export const initialRepeatState: RepeatState = Object.freeze({ fingerprint: null, count: 0, advised: false })

/** The state after `POST .../messages`: the model has new evidence, so the streak starts over. */
export function resetRepeats (): RepeatState {
  return { ...initialRepeatState }
}

const NONE: RepeatDecision = Object.freeze({ action: 'none' })

/**
 * Walks a batch's calls in source order (SPEC section 6). An untracked call
 * neither advances nor resets the streak. Termination is checked before the
 * advisory, so when both thresholds are equal the call is terminated; once a
 * call is terminated the walk stops and later calls get `none` (the caller
 * marks them terminated because the run has ended).
 */
export function trackRepeats (state: RepeatState, calls: readonly TrackedCall[], thresholds: RepeatThresholds): RepeatOutcome {
  assertThreshold(thresholds.advisory, 'thresholds.advisory')
  assertThreshold(thresholds.termination, 'thresholds.termination')

  let { fingerprint, count, advised } = state
  const decisions: RepeatDecision[] = []
  let terminatedAt: number | null = null

  for (const [index, call] of calls.entries()) {
    if (terminatedAt !== null || !call.tracked) {
      decisions.push(NONE)
      continue
    }
    if (call.fingerprint === fingerprint) {
      count += 1
    } else {
      fingerprint = call.fingerprint
      count = 1
      advised = false
    }
    // `>=` rather than `===`: a stored streak can never slip past a threshold.
    if (thresholds.termination > 0 && count >= thresholds.termination) {
      decisions.push({ action: 'terminate', count })
      terminatedAt = index
    } else if (thresholds.advisory > 0 && count >= thresholds.advisory && !advised) {
      decisions.push({ action: 'advisory', count })
      advised = true
    } else {
      decisions.push(NONE)
    }
  }

  return { state: { fingerprint, count, advised }, decisions, terminatedAt }
}

function assertThreshold (value: number, name: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`Expected \`${name}\` to be a non-negative integer, got ${String(value)}`)
  }
}

/** The most an `agent_policy` message may hold (SPEC section 6). */
export const MAX_POLICY_MESSAGE_CHARS = 512

/** Tool names past this many code points are cut: an unknown tool's name is whatever the model wrote. */
const MAX_TOOL_NAME_IN_MESSAGE = 128

/**
 * The `agent_policy` text for an advisory: names the tool and the count, never
 * the arguments, and is at most 512 characters whatever the name or count.
 */
export function policyMessage (toolName: string, count: number): string {
  if (!Number.isInteger(count) || count < 1) {
    throw new TypeError(`Expected \`count\` to be a positive integer, got ${String(count)}`)
  }
  const render = (name: string): string =>
    `You have called the tool "${name}" ${count} times in a row with identical arguments. ` +
    'Repeating the same call will not give a different result. Change your approach ' +
    '(different arguments or a different tool) or stop and tell the user what is blocking you.'
  const budget = MAX_POLICY_MESSAGE_CHARS - render('').length
  return render(boundedName(toolName, Math.min(budget, MAX_TOOL_NAME_IN_MESSAGE)))
}

/**
 * A tool name fit for a policy message: control characters replaced, cut by
 * code point (never inside a surrogate pair) to at most `maxUnits` UTF-16 units.
 */
export function boundedName (toolName: string, maxUnits: number): string {
  // Control characters (newlines included) could break the message's shape.
  const clean = String(toolName).replace(/\p{Cc}/gu, '?')
  if (clean.length <= maxUnits) return clean
  const ellipsis = '…'
  let out = ''
  for (const codePoint of clean) {
    if (out.length + codePoint.length + ellipsis.length > maxUnits) break
    out += codePoint
  }
  return out + ellipsis
}
