/**
 * Loop detection (SPEC sections 6 and 15) as one guard, over the registered
 * loop kinds (src/repeat/kinds/). At admission, inside the run's atomic
 * update: the exact-repeat streak and the kinds that read calls (cycles)
 * walk the calls before the cut, each may terminate the run at a call.
 * While the batch runs: the kinds that read results (errors, no_progress)
 * walk what has settled after each epoch. In the batch's final update: the
 * streaks the batch leaves. Its slice of the run: `repeat`, `loops`, and
 * `repeat`/`loops` of `admitted`.
 */
import type { PreparationOutcome } from '../model/call.js'
import type { LoopState } from '../model/loops.js'
import type { CallResult, PolicyMessage } from '../model/result.js'
import type { RunRecord, RunStats } from '../model/run.js'
import { LOOP_KIND_LIST } from '../repeat/kinds/index.js'
import type { AdmittedCall, CallsLoopKind, LoopHit, ResultsLoopKind, SettledCall } from '../repeat/kinds/types.js'
import { type LoopKinds, kindStateOf, kindThresholds, loopStateOf, resetLoopState } from '../repeat/loops.js'
import type { LoopThresholds } from '../repeat/streak.js'
import { policyMessage, resetRepeats, trackRepeats } from '../repeat/tracker.js'
import { emptyLoopCounts } from '../runs/stats.js'
import type { CallInfo, ObserverList } from '../telemetry/types.js'
import type { AdmissionScope, Admitted, BatchGuard, Guard, GuardedBatch, GuardRuntime, ResetCause } from './types.js'

const NAME = 'loops'

const EXACT_TERMINATED = 'Not run: the agent repeated the same call with identical arguments too many times in a row, so the run was stopped.'

/** The kinds of a list split by what they read, made once per guard. */
interface Kinds {
  all: LoopKinds
  calls: readonly CallsLoopKind[]
  results: readonly ResultsLoopKind[]
}

/** A detection admission found at a call, and its kind. */
interface CallHit { kind: CallsLoopKind, hit: LoopHit }

/** One batch's loop detection. */
class LoopGuard implements BatchGuard {
  readonly #batch: GuardedBatch
  readonly #kinds: Kinds
  /** What admission found, by call index: exact-repeat advisories, the exact repeat that terminated, the hits of the kinds that read calls. */
  #advisories: Array<number | undefined> = []
  #exactStop: { index: number, count: number } | null = null
  #hits: Array<CallHit[] | undefined> = []
  /** The loop state this batch's admission started from. */
  #start: LoopState | null = null
  #watch: LoopWatch | null = null
  #limits: RunRecord['options']['limits'] | null = null

  constructor (batch: GuardedBatch, kinds: Kinds) {
    this.#batch = batch
    this.#kinds = kinds
  }

  admit (scope: AdmissionScope): void {
    this.#advisories = []
    this.#exactStop = null
    this.#hits = []
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
    // The kinds that read calls (section 15) walk the calls admitted so far, each from where this batch's admission started.
    const loopStart = (start.loops ??= loopStateOf(r, this.#kinds.all))
    const next: LoopState = { ...loopStateOf(r, this.#kinds.all) }
    for (const kind of this.#kinds.calls) {
      const calls: AdmittedCall[] = []
      for (let i = 0; i < scope.cut; i++) {
        const o = outcomes[i]
        if (o !== undefined) calls.push({ fingerprint: fingerprints[i] ?? '', tool: o.tool?.name ?? o.requestedName, tracked: o.tool?.trackExactRepeats ?? true })
      }
      const walked = kind.walk(kindStateOf(loopStart, kind), calls, kindThresholds(limits, kind))
      for (const [i, hit] of walked.hits.entries()) {
        if (hit === null) continue
        ;(this.#hits[i] ??= []).push({ kind, hit })
        if (hit.decision.action === 'terminate') {
          scope.terminate(i, kind.reason, NAME)
          break
        }
      }
      next[kind.stateKey] = walked.state
    }
    r.loops = next
    this.#start = loopStart
    this.#limits = limits
  }

  begin (rt: GuardRuntime, admitted: Admitted): void {
    if (this.#start === null || this.#limits === null) return
    this.#watch = new LoopWatch({
      observer: rt.observer,
      stats: rt.stats,
      messages: rt.policyMessages,
      outcomes: this.#batch.outcomes,
      fingerprints: this.#batch.fingerprints,
      limits: this.#limits,
      start: this.#start,
      active: admitted.stop === null,
      kinds: this.#kinds
    })
  }

  report (index: number, _verdict: unknown, admitted: Admitted): void {
    const watch = this.#watch
    if (watch === null) return
    const hits = this.#hits[index]
    if (hits !== undefined) for (const { kind, hit } of hits) watch.callsDetected(index, kind, hit)
    const exact = this.#exactStop
    if (exact !== null && exact.index === index && admitted.stop?.index === index && admitted.stop.by === NAME) {
      watch.exactDetected(index, 'terminated', exact.count)
      return
    }
    const advisory = this.#advisories[index]
    if (advisory !== undefined && index < admitted.cut) watch.exactDetected(index, 'advisory', advisory)
  }

  afterEpoch (results: readonly CallResult[]): string | null {
    return this.#watch?.walk(results) ?? null
  }

  close (r: RunRecord): void {
    this.#watch?.save(r)
  }
}

/**
 * The kinds that read results (errors, no_progress), for one batch.
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
  readonly #kinds: Kinds
  /** Each result kind's limits, made once per batch rather than per call. */
  readonly #thresholds: LoopThresholds[]
  readonly #start: LoopState
  /** Each result kind's state, and its hit at the call being walked. */
  readonly #states: unknown[]
  readonly #found: Array<LoopHit | null>
  #cursor = 0
  /** False once the run is terminated (here, or at admission): nothing more is counted. */
  #active: boolean

  constructor (opts: {
    observer: ObserverList, stats: RunStats, messages: PolicyMessage[], outcomes: readonly PreparationOutcome[], fingerprints: readonly string[],
    limits: RunRecord['options']['limits'], start: LoopState, active: boolean, kinds: Kinds
  }) {
    this.#observer = opts.observer
    this.#stats = opts.stats
    this.#messages = opts.messages
    this.#outcomes = opts.outcomes
    this.#fingerprints = opts.fingerprints
    this.#kinds = opts.kinds
    this.#thresholds = opts.kinds.results.map((k) => kindThresholds(opts.limits, k))
    this.#start = opts.start
    this.#states = opts.kinds.results.map((k) => kindStateOf(opts.start, k))
    this.#found = opts.kinds.results.map(() => null)
    this.#active = opts.active
  }

  /** Reports a detection of a kind that reads calls, which admission found at call `index`. */
  callsDetected (index: number, kind: CallsLoopKind, hit: LoopHit): void {
    const o = this.#outcomes[index]
    if (o !== undefined) this.#report(this.#info(o, null), kind.name, hit)
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
  walk (results: readonly CallResult[]): string | null {
    const kinds = this.#kinds.results
    const found = this.#found
    while (this.#active && this.#cursor < results.length) {
      const r = results[this.#cursor]
      const o = this.#outcomes[this.#cursor]
      // A result's place is held until its call settles: a hole, or the batch's PENDING marker (no status).
      if (r === undefined || o === undefined || r.status === undefined) break
      const index = this.#cursor++
      const call: SettledCall = {
        status: r.status, tool: o.tool?.name ?? o.requestedName, tracked: o.tool?.trackExactRepeats ?? true, fingerprint: this.#fingerprints[index] ?? '', content: r.content
      }
      let any = false
      for (let k = 0; k < kinds.length; k++) {
        const stepped = kinds[k]!.step(this.#states[k], call, this.#thresholds[k]!)
        this.#states[k] = stepped.state
        found[k] = stepped.hit
        if (stepped.hit !== null) any = true
      }
      if (!any) continue
      const info = this.#info(o, r.details.epoch ?? null)
      for (let k = 0; k < kinds.length; k++) {
        const hit = found[k]
        if (hit === null || hit === undefined) continue
        const kind = kinds[k]!
        if (this.#report(info, kind.name, hit)) {
          this.#active = false
          return kind.reason
        }
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
    const current = loopStateOf(r, this.#kinds.all)
    if (current.resets !== this.#start.resets) return
    const next: LoopState = { ...current }
    this.#kinds.results.forEach((k, i) => { next[k.stateKey] = this.#states[i] })
    r.loops = next
  }

  #info (o: PreparationOutcome, epoch: number | null): CallInfo {
    return { callId: o.id, tool: o.tool?.name ?? o.requestedName, known: o.tool !== null, epoch }
  }

  /** Emits a detection; answers whether it terminates the run. */
  #report (info: CallInfo, kind: string, hit: LoopHit): boolean {
    const { decision } = hit
    const counts = ((this.#stats.loops ??= emptyLoopCounts(this.#kinds.all))[kind] ??= { advisories: 0, terminations: 0 })
    if (decision.action === 'advisory') {
      counts.advisories++
      this.#observer.repeatDetected(info, 'advisory', decision.count, kind)
      this.#messages.push({ type: 'agent_policy', content: hit.message(decision.count) })
      return false
    }
    counts.terminations++
    this.#observer.repeatDetected(info, 'terminated', decision.count, kind)
    return true
  }
}

/** The loops guard over a list of loop kinds: the registered ones (`loopsGuard`), or a test's. */
export function loopsGuardOf (list: LoopKinds): Guard {
  const kinds: Kinds = {
    all: list,
    calls: list.filter((k): k is CallsLoopKind => k.reads === 'calls'),
    results: list.filter((k): k is ResultsLoopKind => k.reads === 'results')
  }
  /** After a genuine user message: the exact-repeat streak and every loop streak start over, for a batch resumed after it too. */
  const reset = (run: RunRecord, cause: ResetCause): void => {
    run.repeat = resetRepeats()
    if (cause === 'end') {
      delete run.loops
      return
    }
    run.loops = resetLoopState(run.loops, list)
    if (run.admitted !== null) {
      run.admitted.repeat = run.repeat
      run.admitted.loops = run.loops
    }
  }
  const stops = Object.freeze(Object.fromEntries([['exact_repeat', EXACT_TERMINATED], ...list.map((k) => [k.reason, k.terminated])]))
  return { name: NAME, open: (batch) => new LoopGuard(batch, kinds), reset, stops }
}

export const loopsGuard: Guard = loopsGuardOf(LOOP_KIND_LIST)
