/**
 * Exact repeats (SPEC section 6): a call's fingerprint, the streak of
 * identical tracked calls across a run's batches, its advisory and the text
 * a call not run reads once it terminated the run. Loop detection
 * (loops.ts) walks each batch's calls with it at admission.
 */
import { sha256 } from '../model/sha256.js'
import { canonicalJson } from '../model/json.js'
import type { RepeatState } from '../model/run.js'

const FINGERPRINT_PATTERN = /^[0-9a-f]{64}$/

/** How many hex characters of a fingerprint telemetry may show. */
const FINGERPRINT_PREFIX_LENGTH = 12

/**
 * The exact-repeat fingerprint of a call (SPEC section 6): SHA-256 hex of the
 * JCS form of `[toolName, args]`, so the name and the arguments can never run
 * into each other. `args` is the prepared arguments, or, for a call whose
 * arguments did not parse, the raw argument string, which is hashed as a JSON
 * string value and therefore never equals an object with the same text.
 */
export function fingerprint (toolName: string, args: unknown): string {
  checkToolName(toolName)
  return fingerprintOfText(toolName, canonicalJson(args))
}

/**
 * `fingerprint`, given the arguments' canonicalJson text already: the JCS
 * form of `[toolName, args]` is that text with the name before it.
 */
export function fingerprintOfText (toolName: string, canonicalArgs: string): string {
  checkToolName(toolName)
  return sha256(`[${JSON.stringify(toolName)},${canonicalArgs}]`, 'hex')
}

function checkToolName (toolName: unknown): void {
  if (typeof toolName !== 'string') {
    throw new TypeError(`Expected \`toolName\` to be a string, got ${typeof toolName}`)
  }
}

/** The only form of a fingerprint telemetry may show: its first 12 hex characters. */
export function fingerprintPrefix (fp: string): string {
  if (typeof fp !== 'string' || !FINGERPRINT_PATTERN.test(fp)) {
    throw new TypeError('Expected `fp` to be a SHA-256 hex fingerprint')
  }
  return fp.slice(0, FINGERPRINT_PREFIX_LENGTH)
}

/** The run's thresholds; 0 disables the corresponding action. Every loop detector's limits have this shape (loops.ts). */
export interface RepeatThresholds {
  advisory: number
  termination: number
}

/**
 * One call of a batch, in source order. `tracked` is the tool's
 * `trackExactRepeats`; a rejected call of an unknown tool is tracked.
 */
export interface TrackedCall {
  fingerprint: string
  tracked: boolean
}

/** What the repeat policy asks of one call; every loop detector's streak decides the same way (loops.ts). */
export type RepeatDecision =
  | { action: 'none' }
  | { action: 'advisory', count: number }
  | { action: 'terminate', count: number }

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

/** What a call not run reads once an exact repeat terminated the run. */
export const EXACT_TERMINATED = 'Not run: the agent repeated the same call with identical arguments too many times in a row, so the run was stopped.'

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
