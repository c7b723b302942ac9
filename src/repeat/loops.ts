/**
 * What is made from the registered loop kinds (kinds/index.ts): their
 * names, termination reasons, limits and defaults, and a run's loop state.
 * Each function takes the list, so a list other than the registered one
 * (a test's) gets the same treatment.
 */
import type { LoopKind, LoopLimits, LoopState } from '../model/loops.js'
import { LOOP_KIND_LIST } from './kinds/index.js'
import type { LoopKindDefinition, LoopLimitSetting } from './kinds/types.js'

/** The kinds a list of definitions makes. */
export type LoopKinds = readonly LoopKindDefinition[]

/** Every loop kind's name, `exact` (section 6's) first: the metric's labels, the summaries' and events' kinds. */
export function loopKindNames (kinds: LoopKinds = LOOP_KIND_LIST): LoopKind[] {
  return ['exact', ...kinds.map((k) => k.name)]
}

/** Every kind's two limits, in list order (advisory, then termination). */
export function loopLimitSettings (kinds: LoopKinds = LOOP_KIND_LIST): LoopLimitSetting[] {
  return kinds.flatMap((k) => [k.limits.advisory, k.limits.termination])
}

/** The limits a run gets when neither it nor the server says otherwise. */
export function defaultLoopLimits (kinds: LoopKinds = LOOP_KIND_LIST): LoopLimits {
  return Object.freeze(Object.fromEntries(loopLimitSettings(kinds).map((s) => [s.name, s.default])))
}

/** The registered kinds' default limits. */
export const DEFAULT_LOOP_LIMITS: LoopLimits = defaultLoopLimits()

/** The loop limits out of a larger object that carries them by name (the server's configuration), each a number. */
export function pickLoopLimits (from: Readonly<Record<string, unknown>>, kinds: LoopKinds = LOOP_KIND_LIST): LoopLimits {
  return Object.freeze(Object.fromEntries(loopLimitSettings(kinds).map((s) => {
    const value = from[s.name]
    return [s.name, typeof value === 'number' ? value : s.default]
  })))
}

/** The loop state of a new run. */
export function initialLoopState (kinds: LoopKinds = LOOP_KIND_LIST): LoopState {
  const state: Record<string, unknown> = {}
  for (const k of kinds) state[k.stateKey] = k.initial()
  // `resets` last, as records have always held it.
  return { ...state, resets: 0 }
}

/** After a genuine user message: every streak starts over. */
export function resetLoopState (previous: LoopState | undefined, kinds: LoopKinds = LOOP_KIND_LIST): LoopState {
  const next = initialLoopState(kinds)
  next.resets = (previous?.resets ?? 0) + 1
  return next
}

/**
 * The run's loop state; a record stored before the detectors existed (a
 * shared store outlives a deploy) has none and starts from nothing.
 */
export function loopStateOf (run: { loops?: LoopState }, kinds: LoopKinds = LOOP_KIND_LIST): LoopState {
  return run.loops ?? initialLoopState(kinds)
}

/** One kind's state in a run's loop state; a record stored before the kind existed starts it from nothing. */
export function kindStateOf<S> (state: LoopState, kind: { stateKey: string, initial: () => S }): S {
  return (state[kind.stateKey] as S | undefined) ?? kind.initial()
}

/** A kind's two limits out of a run's limits, the defaults filling what an older record lacks. */
export function kindThresholds (limits: Readonly<Record<string, number | null | undefined>>, kind: LoopKindDefinition): { advisory: number, termination: number } {
  const { advisory, termination } = kind.limits
  return { advisory: limits[advisory.name] ?? advisory.default, termination: limits[termination.name] ?? termination.default }
}

/** Names as a sentence lists them: `a, b or c`. */
export function spokenList (names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)!}`
}
