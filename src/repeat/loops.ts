/**
 * Loop detection (SPEC sections 6 and 15), but for the kinds themselves:
 * each kind beyond exact repeats is one file of kinds/, registered in
 * kinds/index.ts. Here, in this order:
 * - the streak every detector shares (advisory, then termination) and what
 *   a kind is (its names, limits, texts and detector);
 * - what is made from a list of kinds: their names, limits and defaults, a
 *   run's loop state and counts (each function takes the list, so a test's
 *   list gets the same treatment as the registered one);
 * - a tool's `ignoreArguments`: the members a fingerprint leaves out, for
 *   every kind and for exact repeats;
 * - running the detectors over one batch (`LoopDetection`): at admission,
 *   inside the run's atomic update, the exact-repeat streak (exact.ts) and
 *   the kinds that read calls walk the calls before the cut, each may
 *   terminate the run at a call; while the batch runs, the kinds that read
 *   results walk what has settled after each epoch; in the batch's final
 *   update, the streaks it leaves. Its hooks are the guard seam's; the loops
 *   guard (src/guards/loops.ts) registers it.
 */
import type { PreparationOutcome } from '../model/call.js'
import { arrayIndex, parsePointer } from '../model/json-pointer.js'
import type { LoopKind, LoopLimits, LoopState } from '../model/loops.js'
import type { CallResult, PolicyMessage } from '../model/result.js'
import type { LoopCounts, RunRecord, RunStats, TerminationReason } from '../model/run.js'
import {
  EXACT_TERMINATED, MAX_POLICY_MESSAGE_CHARS, type RepeatDecision, type RepeatThresholds,
  boundedName, fingerprint, fingerprintOfText, policyMessage, resetRepeats, trackRepeats
} from './exact.js'

// The streak every detector shares.

/** A detector's two limits; 0 disables that action. Exact repeats' shape (exact.ts). */
export type LoopThresholds = RepeatThresholds

/** What a streak asks of one call. */
export type StreakDecision = RepeatDecision

export const NO_DECISION: StreakDecision = Object.freeze({ action: 'none' })

/**
 * The shared shape of every detector: termination is checked before the
 * advisory (equal limits terminate), `>=` so a stored streak can never slip
 * past a limit, and one advisory per streak.
 */
export function decide (count: number, advised: boolean, t: LoopThresholds): { decision: StreakDecision, advised: boolean } {
  if (t.termination > 0 && count >= t.termination) return { decision: { action: 'terminate', count }, advised }
  if (t.advisory > 0 && count >= t.advisory && !advised) return { decision: { action: 'advisory', count }, advised: true }
  return { decision: NO_DECISION, advised }
}

/** Throws a TypeError naming the limit that is not a non-negative integer; checked at every step, so it allocates nothing. */
export function assertThresholds (t: LoopThresholds): void {
  assertThreshold('advisory', t.advisory)
  assertThreshold('termination', t.termination)
}

function assertThreshold (name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`Expected \`thresholds.${name}\` to be a non-negative integer, got ${String(value)}`)
  }
}

// What a loop kind is.

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

/** The kinds a list of definitions makes. */
export type LoopKinds = readonly LoopKindDefinition[]

/** Tool names past this many code points are cut: an unknown tool's name is whatever the model wrote. */
const MAX_TOOL_NAME = 128

/**
 * Renders a loop kind's advisory from tool names and a positive count,
 * cutting the names (never the sentence) so the whole stays within 512
 * characters, whatever the names.
 */
export function boundedMessage (names: readonly string[], count: number, render: (quoted: string[]) => string): string {
  if (!Number.isInteger(count) || count < 1) throw new TypeError(`Expected \`count\` to be a positive integer, got ${String(count)}`)
  const fixed = render(names.map(() => '')).length
  const each = Math.max(1, Math.min(MAX_TOOL_NAME, Math.floor((MAX_POLICY_MESSAGE_CHARS - fixed) / Math.max(1, names.length))))
  return render(names.map((name) => boundedName(name, each)))
}

// What is made from a list of kinds.

/** Every loop kind's name, `exact` (section 6's) first: the metric's labels, the summaries' and events' kinds. */
export function loopKindNames (kinds: LoopKinds): LoopKind[] {
  return ['exact', ...kinds.map((k) => k.name)]
}

/** Every kind's two limits, in list order (advisory, then termination). */
export function loopLimitSettings (kinds: LoopKinds): LoopLimitSetting[] {
  return kinds.flatMap((k) => [k.limits.advisory, k.limits.termination])
}

/** The limits a run gets when neither it nor the server says otherwise. */
export function defaultLoopLimits (kinds: LoopKinds): LoopLimits {
  return Object.freeze(Object.fromEntries(loopLimitSettings(kinds).map((s) => [s.name, s.default])))
}

/** The loop limits out of a larger object that carries them by name (the server's configuration), each a number. */
export function pickLoopLimits (from: Readonly<Record<string, unknown>>, kinds: LoopKinds): LoopLimits {
  return Object.freeze(Object.fromEntries(loopLimitSettings(kinds).map((s) => {
    const value = from[s.name]
    return [s.name, typeof value === 'number' ? value : s.default]
  })))
}

/** The loop state of a new run. */
export function initialLoopState (kinds: LoopKinds): LoopState {
  const state: Record<string, unknown> = {}
  for (const k of kinds) state[k.stateKey] = k.initial()
  // `resets` last, as records have always held it.
  return { ...state, resets: 0 }
}

/** After a genuine user message: every streak starts over. */
export function resetLoopState (previous: LoopState | undefined, kinds: LoopKinds): LoopState {
  const next = initialLoopState(kinds)
  next.resets = (previous?.resets ?? 0) + 1
  return next
}

/**
 * The run's loop state; a record stored before the detectors existed (a
 * shared store outlives a deploy) has none and starts from nothing.
 */
export function loopStateOf (run: { loops?: LoopState }, kinds: LoopKinds): LoopState {
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

/** Every loop kind's counts at zero (made with a batch's or run's first detection). */
export function emptyLoopCounts (kinds: LoopKinds): LoopCounts {
  const counts: LoopCounts = {}
  for (const kind of kinds) counts[kind.name] = { advisories: 0, terminations: 0 }
  return counts
}

/** Names as a sentence lists them: `a, b or c`. */
export function spokenList (names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)!}`
}

// A tool's ignoreArguments.

/**
 * Parses a tool's `ignoreArguments` pointers once, at registration. Throws
 * an Error naming the problem: a pointer that is not RFC 6901, or the empty
 * pointer (ignoring the whole arguments would make every call one call).
 */
export function compileIgnoredArguments (pointers: readonly string[]): ReadonlyArray<readonly string[]> {
  return pointers.map((pointer) => {
    const tokens = parsePointer(pointer)
    if (tokens.length === 0) throw new Error('must point inside the arguments, not at the whole of them')
    return Object.freeze(tokens)
  })
}

/**
 * The arguments without the members the pointers name, for fingerprints
 * only: the value given is never changed (the executor receives it whole),
 * and only the objects and arrays on a removed member's path are copied.
 * A pointer that leads nowhere removes nothing; an array element is
 * spliced out.
 */
export function withoutIgnored (args: unknown, ignored: ReadonlyArray<readonly string[]>): unknown {
  let out = args
  for (const tokens of ignored) out = removeAt(out, tokens, 0)
  return out
}

function removeAt (value: unknown, tokens: readonly string[], depth: number): unknown {
  if (value === null || typeof value !== 'object') return value
  const token = tokens[depth]!
  const last = depth === tokens.length - 1
  if (Array.isArray(value)) {
    const i = arrayIndex(token)
    if (i < 0 || i >= value.length) return value
    const copy = value.slice()
    if (last) copy.splice(i, 1)
    else {
      const inner = removeAt(value[i], tokens, depth + 1)
      if (inner === value[i]) return value
      copy[i] = inner
    }
    return copy
  }
  const record = value as Record<string, unknown>
  if (!Object.hasOwn(record, token)) return value
  if (last) {
    const copy = { ...record }
    delete copy[token]
    return copy
  }
  const inner = removeAt(record[token], tokens, depth + 1)
  return inner === record[token] ? value : { ...record, [token]: inner }
}

/**
 * A call's fingerprint (SPEC sections 6 and 15): from the canonical text of
 * its arguments, unless its tool ignores some of them, in which case from
 * the arguments without those. A raw argument string that did not parse is
 * fingerprinted as it is.
 */
export function callFingerprint (toolName: string, ignored: ReadonlyArray<readonly string[]> | undefined, args: unknown, canonicalArgs: string): string {
  if (ignored === undefined || ignored.length === 0 || args === null || typeof args !== 'object') return fingerprintOfText(toolName, canonicalArgs)
  return fingerprint(toolName, withoutIgnored(args, ignored))
}

// Running the detectors over one batch.

/** The kinds of a list split by what they read, made once per list. */
export interface SplitKinds {
  all: LoopKinds
  calls: readonly CallsLoopKind[]
  results: readonly ResultsLoopKind[]
}

export function splitKinds (list: LoopKinds): SplitKinds {
  return {
    all: list,
    calls: list.filter((k): k is CallsLoopKind => k.reads === 'calls'),
    results: list.filter((k): k is ResultsLoopKind => k.reads === 'results')
  }
}

/** What a call not run reads, by each reason loop detection terminates a run for. */
export function loopStops (list: LoopKinds): Readonly<Record<string, string>> {
  return Object.freeze(Object.fromEntries([['exact_repeat', EXACT_TERMINATED], ...list.map((k) => [k.reason, k.terminated])]))
}

/**
 * Inside the run's atomic update, after a genuine user message (`message`)
 * or as the run ends (`end`): the exact-repeat streak and every loop streak
 * start over, for a batch resumed after it too; an ended run keeps no loop state.
 */
export function resetLoops (run: RunRecord, cause: 'message' | 'end', list: LoopKinds): void {
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

/** The batch's calls as loop detection reads them: their preparation and fingerprints, by call index. */
export interface LoopBatch {
  readonly outcomes: readonly PreparationOutcome[]
  readonly fingerprints: readonly string[]
}

/** Admission as loop detection reads it, inside the run's atomic update (the guard seam's admission scope). */
export interface LoopAdmission {
  readonly run: RunRecord
  /** Where this batch's admission started (`RunRecord.admitted`): a store that re-runs the update starts over from it. */
  readonly start: NonNullable<RunRecord['admitted']>
  /** Calls before it may run; the others are terminated. */
  readonly cut: number
  /** Terminates the run at call `index`, unless an earlier call terminated it already. */
  terminate: (index: number, reason: TerminationReason, by: string) => void
}

/** What admission decided, as loop detection reads it: the cut, and who terminated the run where. */
export interface LoopAdmitted {
  readonly cut: number
  readonly stop: { readonly index: number, readonly by: string } | null
}

/** A call a detection was found at, as the batch's observers are told of it. */
export interface DetectedCall {
  callId: string
  tool: string
  /** False when the name resolved to no tool. */
  known: boolean
  epoch: number | null
}

/** The batch as it runs in this process: who is told of each detection (events, metrics, traces), its figures, its policy messages. */
export interface LoopRuntime {
  readonly observer: { repeatDetected: (call: DetectedCall, action: 'advisory' | 'terminated', count: number, kind?: LoopKind) => void }
  readonly stats: RunStats
  readonly policyMessages: PolicyMessage[]
}

/** A detection admission found at a call, and its kind. */
interface CallHit { kind: CallsLoopKind, hit: LoopHit }

/**
 * Loop detection for one batch. Its methods are the guard seam's hooks
 * (src/guards/types.ts), called in their places: `admit`, `begin`,
 * `report`, `afterEpoch`, `close`. `by` names it in the run's terminations.
 */
export class LoopDetection {
  readonly #batch: LoopBatch
  readonly #kinds: SplitKinds
  readonly #by: string
  /** What admission found, by call index: exact-repeat advisories, the exact repeat that terminated, the hits of the kinds that read calls. */
  #advisories: Array<number | undefined> = []
  #exactStop: { index: number, count: number } | null = null
  #hits: Array<CallHit[] | undefined> = []
  /** The loop state this batch's admission started from. */
  #start: LoopState | null = null
  #watch: LoopWatch | null = null
  #limits: RunRecord['options']['limits'] | null = null

  constructor (batch: LoopBatch, kinds: SplitKinds, by: string) {
    this.#batch = batch
    this.#kinds = kinds
    this.#by = by
  }

  admit (scope: LoopAdmission): void {
    this.#advisories = []
    this.#exactStop = null
    this.#hits = []
    const { run: r, start } = scope
    const { outcomes, fingerprints } = this.#batch
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
    if (exact !== null) scope.terminate(exact.index, 'exact_repeat', this.#by)
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
          scope.terminate(i, kind.reason, this.#by)
          break
        }
      }
      next[kind.stateKey] = walked.state
    }
    r.loops = next
    this.#start = loopStart
    this.#limits = limits
  }

  begin (rt: LoopRuntime, admitted: LoopAdmitted): void {
    if (this.#start === null || this.#limits === null) return
    this.#watch = new LoopWatch({
      rt,
      outcomes: this.#batch.outcomes,
      fingerprints: this.#batch.fingerprints,
      limits: this.#limits,
      start: this.#start,
      active: admitted.stop === null,
      kinds: this.#kinds
    })
  }

  report (index: number, _verdict: unknown, admitted: LoopAdmitted): void {
    const watch = this.#watch
    if (watch === null) return
    const hits = this.#hits[index]
    if (hits !== undefined) for (const { kind, hit } of hits) watch.callsDetected(index, kind, hit)
    const exact = this.#exactStop
    if (exact !== null && exact.index === index && admitted.stop?.index === index && admitted.stop.by === this.#by) {
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
class LoopWatch {
  readonly #rt: LoopRuntime
  readonly #outcomes: readonly PreparationOutcome[]
  readonly #fingerprints: readonly string[]
  readonly #kinds: SplitKinds
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
    rt: LoopRuntime, outcomes: readonly PreparationOutcome[], fingerprints: readonly string[],
    limits: RunRecord['options']['limits'], start: LoopState, active: boolean, kinds: SplitKinds
  }) {
    this.#rt = opts.rt
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
    this.#rt.observer.repeatDetected(this.#info(o, null), action, count)
    if (action === 'terminated') {
      this.#rt.stats.repeatTerminations++
      return
    }
    this.#rt.stats.repeatAdvisories++
    this.#rt.policyMessages.push({ type: 'agent_policy', content: policyMessage(tool, count) })
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

  #info (o: PreparationOutcome, epoch: number | null): DetectedCall {
    return { callId: o.id, tool: o.tool?.name ?? o.requestedName, known: o.tool !== null, epoch }
  }

  /** Emits a detection; answers whether it terminates the run. */
  #report (info: DetectedCall, kind: string, hit: LoopHit): boolean {
    const { decision } = hit
    const counts = ((this.#rt.stats.loops ??= emptyLoopCounts(this.#kinds.all))[kind] ??= { advisories: 0, terminations: 0 })
    if (decision.action === 'advisory') {
      counts.advisories++
      this.#rt.observer.repeatDetected(info, 'advisory', decision.count, kind)
      this.#rt.policyMessages.push({ type: 'agent_policy', content: hit.message(decision.count) })
      return false
    }
    counts.terminations++
    this.#rt.observer.repeatDetected(info, 'terminated', decision.count, kind)
    return true
  }
}
