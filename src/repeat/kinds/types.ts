/**
 * What makes a loop kind (SPEC section 15), in one value: its names, its
 * settings, its texts and its detector. Everything else (the run options
 * and their schemas, the server settings, the termination reasons, the
 * figures, the loops guard) is made from the registered list (index.ts).
 */
import type { LoopThresholds, StreakDecision } from '../streak.js'

/** The largest limit a run or the server may set. */
export const MAX_LOOP_LIMIT = 1_000_000

/** One of a kind's two limits: a run option (`limits.<name>`) whose server default is read from `env`. */
export interface LoopLimitSetting {
  /** Its name in a run's `limits` and in the server's configuration. */
  readonly name: string
  /** The environment variable of the server's default. */
  readonly env: string
  readonly default: number
  /** What docs/configuration.md and `--help` say of it. */
  readonly help: string
}

/** A detection at one call: the decision, and the advisory's model-facing message (made only when it is one). */
export interface LoopHit {
  readonly decision: Exclude<StreakDecision, { action: 'none' }>
  message: (count: number) => string
}

/** A call as the kinds that read calls at admission see it, in source order. */
export interface AdmittedCall {
  fingerprint: string
  /** The canonical tool name, or the requested one when none resolved. */
  tool: string
  /** The tool's `trackExactRepeats` (default true). */
  tracked: boolean
}

/** A settled call as the kinds that read results see it, in source order. */
export interface SettledCall extends AdmittedCall {
  status: string
  content: string
}

interface LoopKindBase<S> {
  /** Its name in metrics, summaries and `tool.repeat_detected` events. */
  readonly name: string
  /** The run's `terminationReason` when it stops the run. */
  readonly reason: string
  /** Its key in a run's loop state. */
  readonly stateKey: string
  readonly limits: { readonly advisory: LoopLimitSetting, readonly termination: LoopLimitSetting }
  /** What a call not run reads once this kind stopped the run. */
  readonly terminated: string
  /** Its state in a new run, and after a genuine user message. */
  initial (): S
}

/**
 * A kind that reads the calls at admission, inside the run's atomic update
 * (cycles): it walks the calls the budget admits and may stop the run at one,
 * which is then not dispatched.
 */
export interface CallsLoopKind<S = unknown> extends LoopKindBase<S> {
  readonly reads: 'calls'
  /** One hit (or null) per call; the walk stops at a termination. */
  walk (state: S, calls: readonly AdmittedCall[], t: LoopThresholds): { state: S, hits: ReadonlyArray<LoopHit | null> }
}

/**
 * A kind that reads results (error streaks, no progress): each settled call
 * in source order after each epoch; a termination stops every later epoch.
 */
export interface ResultsLoopKind<S = unknown> extends LoopKindBase<S> {
  readonly reads: 'results'
  step (state: S, call: SettledCall, t: LoopThresholds): { state: S, hit: LoopHit | null }
}

/** A loop kind beyond exact repeats. */
export type LoopKindDefinition<S = unknown> = CallsLoopKind<S> | ResultsLoopKind<S>
