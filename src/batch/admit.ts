import type { CycleHit } from '../repeat/cycle.js'
import { trackRepeats } from '../repeat/tracker.js'
import type { RepeatState, RunLimits, TerminationReason } from '../model/run.js'

/** What admission needs of a prepared (or rejected) call. */
export interface AdmissionCall {
  fingerprint: string
  /** The tool's `trackExactRepeats`; calls of unknown tools are tracked. */
  tracked: boolean
}

/** `cycle`: a cycle detection at this call (src/batch/loop-watch.ts adds it); `count` is an exact repeat's. */
export type AdmissionDecision =
  | { kind: 'admit', advisory: number | null, cycle?: CycleHit }
  | { kind: 'terminated', reason: 'exact_repeat' | 'max_tool_calls' | 'repeat_cycle', count: number | null, cycle?: CycleHit }

export interface Admission {
  decisions: AdmissionDecision[]
  repeat: RepeatState
  /** Calls counted against maxToolCalls. */
  admitted: number
  advisories: number
  termination: { reason: TerminationReason, index: number } | null
}

/**
 * Decides, in source order, which calls of a batch may go on: the
 * maxToolCalls budget first cuts the batch, then the exact-repeat tracker
 * walks what is left. Pure: the caller stores the result atomically.
 */
export function admit (repeat: RepeatState, toolCallsSoFar: number, limits: RunLimits, calls: readonly AdmissionCall[]): Admission {
  const budget = limits.maxToolCalls === null ? calls.length : Math.max(0, limits.maxToolCalls - toolCallsSoFar)
  const within = budget >= calls.length ? calls : calls.slice(0, budget)
  const tracked = trackRepeats(repeat, within, {
    advisory: limits.exactToolRepeatAdvisoryThreshold,
    termination: limits.exactToolRepeatTerminationThreshold
  })

  const decisions: AdmissionDecision[] = []
  let advisories = 0
  let termination: Admission['termination'] = null
  for (let i = 0; i < calls.length; i++) {
    if (termination !== null) {
      decisions.push({ kind: 'terminated', reason: termination.reason as 'exact_repeat' | 'max_tool_calls', count: null })
      continue
    }
    if (i >= within.length) {
      termination = { reason: 'max_tool_calls', index: i }
      decisions.push({ kind: 'terminated', reason: 'max_tool_calls', count: null })
      continue
    }
    const d = tracked.decisions[i]!
    if (d.action === 'terminate') {
      termination = { reason: 'exact_repeat', index: i }
      decisions.push({ kind: 'terminated', reason: 'exact_repeat', count: d.count })
    } else if (d.action === 'advisory') {
      advisories++
      decisions.push({ kind: 'admit', advisory: d.count })
    } else {
      decisions.push({ kind: 'admit', advisory: null })
    }
  }
  // Only calls before the termination point count as prepared-and-admitted.
  const admitted = termination === null ? calls.length : termination.index
  return { decisions, repeat: tracked.state, admitted, advisories, termination }
}
