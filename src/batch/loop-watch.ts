import type { PreparationOutcome } from '../model/call.js'
import { type CycleCall, type ErrorStreak, type LoopKind, type LoopLimits, type LoopState, type NoProgressStreak } from '../model/loops.js'
import { type CycleHit, trackCycles } from '../repeat/cycle.js'
import { stepErrors } from '../repeat/errors.js'
import { type LoopTerminationReason, LOOP_TERMINATION_REASONS, loopLimitsOf, loopStateOf } from '../repeat/loops.js'
import type { LoopThresholds, StreakDecision } from '../repeat/streak.js'
import { cycleMessage, errorsMessage, noProgressMessage } from '../repeat/messages.js'
import { stepNoProgress } from '../repeat/no-progress.js'
import { emptyLoopCounts } from '../runs/stats.js'
import type { RunRecord, RunStats } from '../model/run.js'
import type { CallInfo, ObserverList } from '../telemetry/types.js'
import type { Admission } from './admit.js'
import type { CallResult, PolicyMessage } from '../model/result.js'

/**
 * Inside the run's atomic update, after exact repeats and the call budget
 * were decided: walks the tracked calls admitted so far for cycles (SPEC
 * section 15). A cycle that reaches its termination repetition ends the
 * admission there, like an exact repeat: that call and every later one are
 * `terminated` with `repeat_cycle`. Stores the run's new cycle state, and
 * answers the loop state this batch started from (a resumed batch starts
 * from it again, as its exact-repeat streak does).
 */
export function admitLoops (r: RunRecord, from: { loops?: LoopState }, a: Admission, outcomes: readonly PreparationOutcome[], fingerprints: readonly string[]): LoopState {
  const start = (from.loops ??= loopStateOf(r))
  const end = a.termination?.index ?? outcomes.length
  const indexes: number[] = []
  const calls: CycleCall[] = []
  for (let i = 0; i < end; i++) {
    const o = outcomes[i]!
    if (a.decisions[i]?.kind !== 'admit') continue
    indexes.push(i)
    calls.push({ fingerprint: fingerprints[i]!, tool: o.tool?.name ?? o.requestedName, tracked: o.tool?.trackExactRepeats ?? true })
  }
  const limits = loopLimitsOf(r.options.limits)
  const walked = trackCycles(start.cycle, calls, { advisory: limits.cycleAdvisoryRepetitions, termination: limits.cycleTerminationRepetitions })
  for (const [k, hit] of walked.hits.entries()) {
    if (hit === null) continue
    const i = indexes[k]!
    if (hit.decision.action === 'advisory') {
      a.decisions[i] = { ...a.decisions[i]!, cycle: hit }
      continue
    }
    a.decisions[i] = { kind: 'terminated', reason: 'repeat_cycle', count: null, cycle: hit }
    for (let j = i + 1; j < a.decisions.length; j++) a.decisions[j] = { kind: 'terminated', reason: 'repeat_cycle', count: null }
    a.termination = { reason: 'repeat_cycle', index: i }
    a.admitted = i
  }
  r.loops = { ...loopStateOf(r), cycle: walked.state }
  return start
}

/**
 * The detectors that read results, errors and no_progress, for one batch.
 * They walk the results in source order as far as every call has settled:
 * the rejections before the first epoch, then after each epoch (epochs are
 * consecutive runs of calls in source order, so what has settled then is
 * always a prefix), then the rest when the batch finishes. The walk thus
 * sees the same sequence whatever order calls completed in, and a
 * termination found after an epoch stops every later epoch from starting.
 * Cycle detections, decided at admission, are reported here too.
 */
export class LoopWatch {
  readonly #observer: ObserverList
  readonly #stats: RunStats
  readonly #messages: PolicyMessage[]
  readonly #outcomes: readonly PreparationOutcome[]
  readonly #fingerprints: readonly string[]
  readonly #pending: CallResult
  /** The two detectors' limits, made once per batch rather than per call. */
  readonly #errorLimits: LoopThresholds
  readonly #noProgressLimits: LoopThresholds
  readonly #start: LoopState
  #errors: ErrorStreak
  #noProgress: NoProgressStreak
  #cursor = 0
  /** False once the run is terminated (here, or at admission): nothing more is counted. */
  #active: boolean

  constructor (opts: {
    observer: ObserverList, stats: RunStats, messages: PolicyMessage[], outcomes: readonly PreparationOutcome[], fingerprints: readonly string[],
    pending: CallResult, limits: Partial<LoopLimits>, start: LoopState, active: boolean
  }) {
    this.#observer = opts.observer
    this.#stats = opts.stats
    this.#messages = opts.messages
    this.#outcomes = opts.outcomes
    this.#fingerprints = opts.fingerprints
    this.#pending = opts.pending
    const limits = loopLimitsOf(opts.limits)
    this.#errorLimits = { advisory: limits.consecutiveErrorAdvisory, termination: limits.consecutiveErrorTermination }
    this.#noProgressLimits = { advisory: limits.noProgressAdvisory, termination: limits.noProgressTermination }
    this.#start = opts.start
    this.#errors = opts.start.errors
    this.#noProgress = opts.start.noProgress
    this.#active = opts.active
  }

  /** Reports a cycle admission found at call `index`. */
  cycleDetected (index: number, hit: CycleHit): void {
    const o = this.#outcomes[index]!
    this.#report(this.#info(o, null), 'cycle', hit.decision, (n) => cycleMessage(hit.tools, n))
  }

  /** Walks every call settled since the last walk; answers the termination reason when a limit is reached. */
  walk (results: readonly CallResult[]): LoopTerminationReason | null {
    while (this.#active && this.#cursor < results.length) {
      const r = results[this.#cursor]!
      if (r === this.#pending) break
      const index = this.#cursor++
      const o = this.#outcomes[index]!
      const tool = o.tool?.name ?? o.requestedName
      const errors = stepErrors(this.#errors, { status: r.status, tool }, this.#errorLimits)
      const polled = stepNoProgress(this.#noProgress, {
        status: r.status, tool, tracked: o.tool?.trackExactRepeats ?? true, fingerprint: this.#fingerprints[index]!, content: r.content
      }, this.#noProgressLimits)
      this.#errors = errors.streak
      this.#noProgress = polled.streak
      if (errors.decision.action === 'none' && polled.decision.action === 'none') continue
      const info = this.#info(o, r.details.epoch ?? null)
      const stop = this.#report(info, 'errors', errors.decision, (n) => errorsMessage(errors.streak.tools, n)) ??
        this.#report(info, 'no_progress', polled.decision, (n) => noProgressMessage(tool, n))
      if (stop !== null) {
        this.#active = false
        return stop
      }
    }
    return null
  }

  /**
   * Inside the batch's final atomic update: stores the streaks this batch
   * leaves. A run that ended keeps nothing; a message that came while the
   * batch ran reset the streaks after it, and they stay reset.
   */
  save (r: RunRecord): void {
    if (r.state === 'ended') return
    const current = loopStateOf(r)
    if (current.resets !== this.#start.resets) return
    r.loops = { ...current, errors: this.#errors, noProgress: this.#noProgress }
  }

  #info (o: PreparationOutcome, epoch: number | null): CallInfo {
    return { callId: o.id, tool: o.tool?.name ?? o.requestedName, known: o.tool !== null, epoch }
  }

  /** Emits a detection; answers the termination reason when it is one. */
  #report (info: CallInfo, kind: Exclude<LoopKind, 'exact'>, decision: StreakDecision, message: (count: number) => string): LoopTerminationReason | null {
    if (decision.action === 'none') return null
    const counts = (this.#stats.loops ??= emptyLoopCounts())[kind]
    if (decision.action === 'advisory') {
      counts.advisories++
      this.#observer.repeatDetected(info, 'advisory', decision.count, kind)
      this.#messages.push({ type: 'agent_policy', content: message(decision.count) })
      return null
    }
    counts.terminations++
    this.#observer.repeatDetected(info, 'terminated', decision.count, kind)
    return LOOP_TERMINATION_REASONS[kind]
  }
}
