/**
 * Loop detection (SPEC sections 6 and 15) as one guard. At admission,
 * inside the run's atomic update: the exact-repeat streak and the cycle
 * detector walk the calls before the cut, each may terminate the run at a
 * call. While the batch runs: the detectors that read results (errors,
 * no_progress) walk what has settled after each epoch. In the batch's final
 * update: the streaks the batch leaves. Its slice of the run: `repeat`,
 * `loops`, and `repeat`/`loops` of `admitted`.
 */
import type { PreparationOutcome } from '../model/call.js'
import type { CycleCall, ErrorStreak, LoopKind, LoopLimits, LoopState, NoProgressStreak } from '../model/loops.js'
import type { CallResult, PolicyMessage } from '../model/result.js'
import type { RunRecord, RunStats } from '../model/run.js'
import { type CycleHit, trackCycles } from '../repeat/cycle.js'
import { stepErrors } from '../repeat/errors.js'
import { LOOP_TERMINATION_REASONS, type LoopTerminationReason, loopLimitsOf, loopStateOf, resetLoopState } from '../repeat/loops.js'
import { cycleMessage, errorsMessage, noProgressMessage } from '../repeat/messages.js'
import { stepNoProgress } from '../repeat/no-progress.js'
import type { LoopThresholds, StreakDecision } from '../repeat/streak.js'
import { policyMessage, resetRepeats, trackRepeats } from '../repeat/tracker.js'
import { emptyLoopCounts } from '../runs/stats.js'
import type { CallInfo, ObserverList } from '../telemetry/types.js'
import type { AdmissionScope, Admitted, BatchGuard, Guard, GuardedBatch, GuardRuntime, ResetCause } from './types.js'

const NAME = 'loops'

/** One batch's loop detection. */
class LoopGuard implements BatchGuard {
  readonly #batch: GuardedBatch
  /** What admission found, by call index: exact-repeat advisories, the exact repeat that terminated, cycle hits. */
  #advisories: Array<number | undefined> = []
  #exactStop: { index: number, count: number } | null = null
  #cycles: Array<CycleHit | undefined> = []
  /** The loop state this batch's admission started from. */
  #start: LoopState | null = null
  #watch: LoopWatch | null = null
  #limits: Partial<LoopLimits> = {}

  constructor (batch: GuardedBatch) {
    this.#batch = batch
  }

  admit (scope: AdmissionScope): void {
    this.#advisories = []
    this.#exactStop = null
    this.#cycles = []
    const { run: r, start, batch } = scope
    const { outcomes, fingerprints } = batch
    const limits = r.options.limits
    // Exact repeats (section 6) walk the calls the budget admits.
    const within = outcomes.slice(0, scope.cut).map((o, i) => ({ fingerprint: fingerprints[i] ?? '', tracked: o.tool?.trackExactRepeats ?? true }))
    const tracked = trackRepeats((start.repeat ??= r.repeat), within, {
      advisory: limits.exactToolRepeatAdvisoryThreshold,
      termination: limits.exactToolRepeatTerminationThreshold
    })
    for (const [i, d] of tracked.decisions.entries()) {
      if (d.action === 'advisory') this.#advisories[i] = d.count
      else if (d.action === 'terminate') this.#exactStop = { index: i, count: d.count }
    }
    const exact = this.#exactStop
    if (exact !== null) scope.terminate(exact.index, 'exact_repeat', NAME)
    r.repeat = tracked.state
    // Cycles (section 15) walk the tracked calls admitted so far.
    const loopStart = (start.loops ??= loopStateOf(r))
    const calls: CycleCall[] = []
    for (let i = 0; i < scope.cut; i++) {
      const o = outcomes[i]
      if (o !== undefined) calls.push({ fingerprint: fingerprints[i] ?? '', tool: o.tool?.name ?? o.requestedName, tracked: o.tool?.trackExactRepeats ?? true })
    }
    const l = loopLimitsOf(limits)
    const walked = trackCycles(loopStart.cycle, calls, { advisory: l.cycleAdvisoryRepetitions, termination: l.cycleTerminationRepetitions })
    for (const [i, hit] of walked.hits.entries()) {
      if (hit === null) continue
      this.#cycles[i] = hit
      if (hit.decision.action === 'terminate') {
        scope.terminate(i, 'repeat_cycle', NAME)
        break
      }
    }
    r.loops = { ...loopStateOf(r), cycle: walked.state }
    this.#start = loopStart
    this.#limits = limits
  }

  begin (rt: GuardRuntime, admitted: Admitted): void {
    if (this.#start === null) return
    this.#watch = new LoopWatch({
      observer: rt.observer, stats: rt.stats, messages: rt.policyMessages, outcomes: this.#batch.outcomes, fingerprints: this.#batch.fingerprints, limits: this.#limits, start: this.#start, active: admitted.stop === null
    })
  }

  report (index: number, _verdict: unknown, admitted: Admitted): void {
    const watch = this.#watch
    if (watch === null) return
    const hit = this.#cycles[index]
    if (hit !== undefined) watch.cycleDetected(index, hit)
    const exact = this.#exactStop
    if (exact !== null && exact.index === index && admitted.stop?.index === index && admitted.stop.by === NAME) {
      watch.exactDetected(index, 'terminated', exact.count)
      return
    }
    const advisory = this.#advisories[index]
    if (advisory !== undefined && index < admitted.cut) watch.exactDetected(index, 'advisory', advisory)
  }

  afterEpoch (results: readonly CallResult[]): LoopTerminationReason | null {
    return this.#watch?.walk(results) ?? null
  }

  close (r: RunRecord): void {
    this.#watch?.save(r)
  }
}

/**
 * The detectors that read results, errors and no_progress, for one batch.
 * They walk the results in source order as far as every call has settled:
 * the rejections before the first epoch, then after each epoch (epochs are
 * consecutive runs of calls in source order, so what has settled then is
 * always a prefix), then the rest when the batch finishes. The walk thus
 * sees the same sequence whatever order calls completed in, and a
 * termination found after an epoch stops every later epoch from starting.
 * Detections decided at admission (exact repeats, cycles) are reported here too.
 */
export class LoopWatch {
  readonly #observer: ObserverList
  readonly #stats: RunStats
  readonly #messages: PolicyMessage[]
  readonly #outcomes: readonly PreparationOutcome[]
  readonly #fingerprints: readonly string[]
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
    limits: Partial<LoopLimits>, start: LoopState, active: boolean
  }) {
    this.#observer = opts.observer
    this.#stats = opts.stats
    this.#messages = opts.messages
    this.#outcomes = opts.outcomes
    this.#fingerprints = opts.fingerprints
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
    const o = this.#outcomes[index]
    if (o !== undefined) this.#report(this.#info(o, null), 'cycle', hit.decision, (n) => cycleMessage(hit.tools, n))
  }

  /** Reports an exact repeat admission found at call `index`. */
  exactDetected (index: number, action: 'advisory' | 'terminated', count: number): void {
    const o = this.#outcomes[index]
    if (o === undefined) return
    const tool = o.tool?.name ?? o.requestedName
    this.#observer.repeatDetected(this.#info(o, null), action, count)
    if (action === 'terminated') {
      this.#stats.repeatTerminations++
      return
    }
    this.#stats.repeatAdvisories++
    this.#messages.push({ type: 'agent_policy', content: policyMessage(tool, count) })
  }

  /** Walks every call settled since the last walk; answers the termination reason when a limit is reached. */
  walk (results: readonly CallResult[]): LoopTerminationReason | null {
    while (this.#active && this.#cursor < results.length) {
      const r = results[this.#cursor]
      const o = this.#outcomes[this.#cursor]
      // A result's place is held until its call settles: a hole, or the batch's PENDING marker (no status).
      if (r === undefined || o === undefined || r.status === undefined) break
      const index = this.#cursor++
      const tool = o.tool?.name ?? o.requestedName
      const errors = stepErrors(this.#errors, { status: r.status, tool }, this.#errorLimits)
      const polled = stepNoProgress(this.#noProgress, {
        status: r.status, tool, tracked: o.tool?.trackExactRepeats ?? true, fingerprint: this.#fingerprints[index] ?? '', content: r.content
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

/** After a genuine user message: the exact-repeat streak and every loop streak start over, for a batch resumed after it too. */
function reset (run: RunRecord, cause: ResetCause): void {
  run.repeat = resetRepeats()
  if (cause === 'end') {
    delete run.loops
    return
  }
  run.loops = resetLoopState(run.loops)
  if (run.admitted !== null) {
    run.admitted.repeat = run.repeat
    run.admitted.loops = run.loops
  }
}

export const loopsGuard: Guard = { name: NAME, open: (batch) => new LoopGuard(batch), reset }
