/**
 * The execute phase: the calls admission let through, cut into epochs
 * (src/schedule/plan.ts) and run with the run's concurrency cap and conflict
 * keys (src/schedule/runner.ts); each is sent through its executor
 * (dispatch-call.ts, dispatch-action.ts) and settled into its result.
 */
import { round } from '../../events/recorder.js'
import { IsoTime } from '../../iso-time.js'
import { type RunIdentity, identityOf } from '../../model/incarnation.js'
import { operationId } from '../../receipts/operation-id.js'
import { planEpochs } from '../../schedule/plan.js'
import { EpochRunner } from '../../schedule/runner.js'
import type { DispatchOutcome, Epoch, RunnerHooks, SchedulableCall, Settlement, StopSignal } from '../../schedule/types.js'
import { type ExecutorFailure, executorFailureOf } from '../../telemetry/executor-failure.js'
import type { CallInfo } from '../../telemetry/types.js'
import { retryAction } from '../retry-action.js'
import { UNCERTAIN_MESSAGE, errorContent } from '../../model/content.js'
import { type ActionContext, type ActionOutcome, dispatchAction } from '../dispatch-action.js'
import { type DispatchContext, dispatchPlain } from '../dispatch-call.js'
import type { PreparedCall } from '../../model/call.js'
import { blockedResult, callResult, cancelledResult, reasonOf, terminatedResult } from '../../model/results.js'
import { type CallResult } from '../../model/result.js'
import type { BatchGuard, DispatchOptions, Passage, SendOutcome, Sending } from '../../guards/types.js'
import { stopMessage } from '../../guards/index.js'
import { type BatchRuntime, watchGuards } from '../runtime.js'
import { type BatchState, type Prepared, type Ready, callAt } from '../state.js'

/** When calls started, as ISO text. */
const START_TIMES = new IsoTime()

/** The execute phase: runs the epochs of the calls that may be dispatched, if any. */
export function execute (state: BatchState, rt: BatchRuntime, ready: Ready): Promise<unknown> | undefined {
  if (state.dispatchable.length === 0) return undefined
  return new Execution(state, rt, ready).run()
}

/**
 * One batch's epochs on the runner: the runner's hooks are its methods, so
 * the phase costs one object where a closure per hook would be made.
 */
class Execution implements RunnerHooks {
  readonly #state: BatchState
  readonly #rt: BatchRuntime
  readonly #prepared: Prepared
  readonly #guards: readonly BatchGuard[]
  /** The guards with a hook before an epoch's dispatches, or around each call's: most batches have none, and pay nothing. */
  readonly #epochGuards: readonly BatchGuard[]
  readonly #callGuards: readonly BatchGuard[]
  /** By epoch: the guards' step before it, started by its first dispatch (null: done at once). */
  readonly #epochReady: Array<Promise<void> | null | undefined> = []
  /** By call index: what observers are told of a call, made once when it starts. */
  readonly #started: CallInfo[] = []
  /** By call index: why its exchange with the executor failed, when it did. */
  readonly #failures: Array<ExecutorFailure | undefined> = []
  #epochs: Epoch[] = []
  /** What every dispatch of the batch shares. */
  readonly #context: DispatchContext
  /** The run, as operation ids name it. */
  readonly #identity: RunIdentity

  constructor (state: BatchState, rt: BatchRuntime, ready: Ready) {
    this.#state = state
    this.#rt = rt
    this.#prepared = ready.prepared
    this.#guards = ready.guards
    this.#epochGuards = ready.guards.filter((g) => g.beforeEpoch !== undefined)
    this.#callGuards = ready.guards.filter((g) => g.acquire !== undefined || g.release !== undefined)
    this.#context = {
      runId: state.runId,
      batchId: state.batchId,
      tenant: state.tenant,
      http: rt.deps.http,
      onAnswer: (call, answer) => {
        const failure = executorFailureOf(answer, call.tool.action !== null)
        if (failure !== null) this.#failures[call.index] = failure
      },
      // An MCP server's progress: the `call.progress` event (lifecycle audience), its numbers only.
      onProgress: (call, update) => {
        const info = this.#started[call.index]
        if (info !== undefined) this.#rt.recorder.callProgress(info, update)
      }
    }
    this.#identity = identityOf(state)
  }

  /**
   * Plans and runs the epochs of the calls that may be dispatched: the
   * runner's promise, settled once every call has (its settlements are the
   * hooks'; no async layer of its own around it).
   */
  run (): Promise<unknown> {
    const { options } = this.#state
    const schedulable: SchedulableCall[] = []
    for (const c of this.#state.dispatchable) schedulable.push({ index: c.index, id: c.id, readOnly: c.tool.readOnly, execution: c.tool.execution, conflictKey: c.conflictKey })
    this.#epochs = planEpochs(schedulable, options.toolExecution)
    const runner = new EpochRunner<ActionOutcome>({
      maxConcurrent: options.maxConcurrentTools,
      signal: this.#rt.controller,
      hooks: this,
      onDispatchError: dispatchFailed
    })
    const guarded = this.#epochGuards.length + this.#callGuards.length > 0
    return runner.run(this.#epochs, guarded ? (c, epoch) => this.#guardedDispatch(c, epoch) : (c, epoch) => this.#dispatch(c, epoch))
  }

  /**
   * A dispatch with the guards' steps: before its epoch's first dispatch
   * (once per epoch), and around the call's own: each guard with `acquire`,
   * in registration order, lets it go (with its dispatch options) or
   * answers it instead; each that let it go is released with its outcome.
   * A step waits only on a guard that answers a promise: when every guard
   * answers at once, the call is sent in the same turn, with no promise of
   * its own beyond its send's.
   */
  #guardedDispatch (c: SchedulableCall, epoch: number): Promise<DispatchOutcome<ActionOutcome>> {
    if (this.#epochGuards.length > 0) {
      let ready = this.#epochReady[epoch]
      if (ready === undefined) ready = this.#epochReady[epoch] = this.#beforeEpoch(epoch)
      if (ready !== null) return ready.then(() => this.#acquired(c, epoch))
    }
    return this.#acquired(c, epoch)
  }

  /** Every epoch guard's step, in registration order: null when each answered at once, else what is left to wait for (a throw included). */
  #beforeEpoch (epoch: number): Promise<void> | null {
    const indexes = (this.#epochs[epoch] ?? []).map((c) => c.index)
    const guards = this.#epochGuards
    try {
      for (let i = 0; i < guards.length; i++) {
        const pending = guards[i]?.beforeEpoch?.(epoch, indexes)
        if (pending instanceof Promise) return this.#beforeEpochFrom(pending, i + 1, epoch, indexes)
      }
    } catch (err) {
      // Every dispatch of the epoch fails with it, as when a guard's promise rejects.
      return Promise.reject(err)
    }
    return null
  }

  async #beforeEpochFrom (pending: Promise<void>, from: number, epoch: number, indexes: readonly number[]): Promise<void> {
    await pending
    const guards = this.#epochGuards
    for (let i = from; i < guards.length; i++) await guards[i]?.beforeEpoch?.(epoch, indexes)
  }

  /** After its epoch's step: the call through the call guards, then sent. */
  #acquired (c: SchedulableCall, epoch: number): Promise<DispatchOutcome<ActionOutcome>> {
    if (this.#callGuards.length === 0) return this.#dispatch(c, epoch)
    const call = callAt(this.#state.dispatched, c.index, 'prepared call')
    return this.#pass(new Passing(c, epoch, call, this.#operationOf(call), this.#rt.controller), 0)
  }

  /** Asks the call guards from `from` on; waits only on one that answers a promise. */
  #pass (p: Passing, from: number): Promise<DispatchOutcome<ActionOutcome>> {
    const guards = this.#callGuards
    for (let i = from; i < guards.length; i++) {
      const pending = guards[i]?.acquire?.(p)
      if (pending instanceof Promise) return pending.then((passage) => this.#passed(p, passage) ?? this.#pass(p, i + 1))
      const refused = this.#passed(p, pending)
      if (refused !== undefined) return refused
    }
    return this.#sendPassed(p)
  }

  /** A guard's word on the call: undefined when it lets it go (its options noted), else the refused call's outcome. */
  #passed (p: Passing, passage: Passage): Promise<DispatchOutcome<ActionOutcome>> | undefined {
    if (passage?.kind === 'refused') {
      const outcome: DispatchOutcome<ActionOutcome> = { value: { status: passage.status, content: passage.content, isError: true, details: passage.details }, uncertain: false, closeBatch: false }
      const stop = passage.stop
      const released = this.#release(p.index, p.passed, NOT_SENT)
      const refused = (): DispatchOutcome<ActionOutcome> => {
        if (stop !== undefined) this.#rt.controller.abort(stop)
        return outcome
      }
      return released === undefined ? Promise.resolve(refused()) : released.then(refused)
    }
    p.passed++
    const options = passage?.options
    if (options !== undefined) p.options = p.options === undefined ? options : { ...p.options, ...options }
    return undefined
  }

  /** Sends a call every call guard let go; those are released with its outcome before it settles. */
  #sendPassed (p: Passing): Promise<DispatchOutcome<ActionOutcome>> {
    const { c, epoch, call, operationId: opId, passed, options } = p
    let sending: Promise<DispatchOutcome<ActionOutcome>>
    try {
      sending = this.#send(c, epoch, options === undefined ? call : { ...call, ...options }, opId)
    } catch (err) {
      sending = Promise.reject(err)
    }
    if (!this.#releases(passed)) return sending
    // A send that threw is settled uncertain by the runner (a write may have left): released as such.
    return sending.then(
      (outcome) => {
        const released = this.#release(c.index, passed, { sent: true, uncertain: outcome.uncertain, cause: outcome.value.details.cause })
        return released === undefined ? outcome : released.then(() => outcome)
      },
      (err: unknown) => {
        const released = this.#release(c.index, passed, THREW)
        if (released === undefined) throw err
        return released.then(() => { throw err })
      })
  }

  /** Whether any of the first `passed` call guards is told of the call's outcome. */
  #releases (passed: number): boolean {
    const guards = this.#callGuards
    for (let i = 0; i < passed; i++) if (guards[i]?.release !== undefined) return true
    return false
  }

  /** Tells the first `passed` call guards how the call they let go came out; a promise only when one of them answers one. */
  #release (index: number, passed: number, outcome: SendOutcome): Promise<void> | undefined {
    const guards = this.#callGuards
    for (let i = 0; i < passed; i++) {
      const releasing = guards[i]?.release?.(index, outcome)
      if (releasing instanceof Promise) return this.#releaseFrom(releasing, i + 1, index, passed, outcome)
    }
    return undefined
  }

  async #releaseFrom (pending: Promise<void>, from: number, index: number, passed: number, outcome: SendOutcome): Promise<void> {
    await pending
    const guards = this.#callGuards
    for (let i = from; i < passed; i++) await guards[i]?.release?.(index, outcome)
  }

  /** The operation id a call goes under: the one it was first sent with when a guard's verdict sends it again (`as`). */
  #operationOf (call: PreparedCall): string {
    const verdict = this.#state.admitted?.verdicts[call.index]
    if (verdict?.kind === 'as') return verdict.operationId
    return operationId(this.#identity, call.id, callAt(this.#prepared.fingerprints, call.index, 'fingerprint'))
  }

  #dispatch (c: SchedulableCall, epoch: number): Promise<DispatchOutcome<ActionOutcome>> {
    const call = callAt(this.#state.dispatched, c.index, 'prepared call')
    return this.#send(c, epoch, call, this.#operationOf(call))
  }

  /** Sends a call through its executor under `opId`: plainly, or as an action with its receipt (sent again: under the operation id it was first sent with). */
  #send (c: SchedulableCall, epoch: number, call: PreparedCall, opId: string): Promise<DispatchOutcome<ActionOutcome>> {
    const state = this.#state
    state.operations[c.index] = opId
    const callInfo = this.#started[c.index] ?? this.#info(c, epoch)
    const args = callAt(this.#prepared.argumentTexts, call.index, 'argument text')
    const observer = this.#rt.observer
    const headers = observer.executorHeaders(callInfo)
    const argumentsJson = args.plain ? args.text : args.json
    if (call.tool.action === null) return dispatchPlain(this.#context, call, opId, headers, argumentsJson)
    const ctx: ActionContext = { ...this.#context, store: this.#rt.deps.store, tenant: state.tenant, runCreatedAt: state.createdAt, onProjectionFailed: (problem) => observer.projectionFailed(callInfo, problem) }
    const approvedAt = state.approvals?.held[call.index]?.decision?.at
    if (approvedAt !== undefined) ctx.approvedAt = new Date(approvedAt).toISOString()
    const again = state.admitted?.verdicts[c.index]?.kind === 'as'
    return (again ? retryAction : dispatchAction)(ctx, call, opId, this.#prepared.preparedAt, headers, argumentsJson)
  }

  #info (c: SchedulableCall, epoch: number): CallInfo {
    const tool = callAt(this.#state.dispatched, c.index, 'prepared call').tool
    return { callId: c.id, tool: tool.name, known: true, epoch, description: tool.description }
  }

  /** @internal Runner hook. */
  epochStarted (epoch: number, size: number): void {
    const stats = this.#state.stats
    stats.epochs++
    stats.largestEpoch = Math.max(stats.largestEpoch, size)
    this.#rt.observer.epochStarted(epoch, size)
  }

  /** @internal Runner hook. */
  epochSettled (epoch: number, durationMs: number): void {
    this.#rt.observer.epochSettled(epoch, this.#epochs[epoch]?.length ?? 0, durationMs)
    watchGuards(this.#state, this.#rt, this.#guards)
  }

  /** @internal Runner hook. */
  callStarted (c: SchedulableCall, epoch: number): void {
    this.#rt.observer.callStarted((this.#started[c.index] = this.#info(c, epoch)))
  }

  /** @internal Runner hook: once per call; objects are built whole, without spreads. */
  callSettled (c: SchedulableCall, _epoch: number, s: Settlement<unknown>): void {
    const state = this.#state
    const call = callAt(state.dispatched, c.index, 'prepared call')
    const stats = state.stats
    let result: CallResult
    let durationMs: number | null = null
    if (s.kind === 'ran') {
      const value = s.value as ActionOutcome
      durationMs = s.durationMs
      stats.toolTimeMs += s.durationMs
      // The outcome's details are its own, made for this call: completed in place.
      const details = value.details
      details.epoch = s.epoch
      details.durationMs = round(s.durationMs)
      details.startedAt = START_TIMES.at(s.startedAt)
      if (s.waited !== undefined) details.waited = s.waited
      result = callResult(call, value.status, value.content, details, value.isError)
      if (value.status === 'projection_failed') {
        state.closed = true
        stats.projectionFailures++
      }
      if (value.status === 'uncertain' || details.receipt?.status === 'uncertain') stats.uncertainWrites++
      else if (value.status === 'blocked') stats.blockedCalls++
    } else if (s.kind === 'blocked') {
      stats.blockedCalls++
      result = blockedResult(call, s.blockedBy, s.epoch)
    } else if (state.stoppedBy !== null) {
      result = terminatedResult(call, state.stoppedBy, stopMessage(this.#rt.deps.guards, state.stoppedBy))
    } else {
      const signal = this.#rt.controller
      result = cancelledResult(call, state.closed || !signal.aborted ? 'batch_closed' : String(signal.reason), s.epoch)
    }
    // For the host: which resource the call was kept apart on (derived from arguments: never logged).
    if (c.conflictKey !== null) result.details.conflictKey = c.conflictKey
    state.results[c.index] = result
    const uncertain = result.status === 'uncertain' || result.details.receipt?.status === 'uncertain'
    this.#rt.observer.callSettled({
      callId: c.id, tool: call.tool.name, known: true, epoch: s.epoch, status: result.status, durationMs, uncertain, readOnly: call.tool.readOnly, reason: reasonOf(result.details),
      executor: call.tool.executor.via === undefined ? 'http' : 'mcp', failure: this.#failures[c.index]
    })
  }
}

/** A call on its way through the call guards: what `acquire` sees of it, and how far it got. */
class Passing implements Sending {
  readonly index: number
  /** The guards (in registration order) that let it go so far. */
  passed = 0
  options: DispatchOptions | undefined = undefined

  constructor (readonly c: SchedulableCall, readonly epoch: number, readonly call: PreparedCall, readonly operationId: string, readonly signal: StopSignal) {
    this.index = c.index
  }
}

/** What a guard that let a call go is told when a later one refused it. */
const NOT_SENT: SendOutcome = { sent: false, uncertain: false }

/** What a guard that let a call go is told when its send threw inside toolgate (settled uncertain by the runner: a write may have left). */
const THREW: SendOutcome = { sent: true, uncertain: true, cause: 'internal_error' }

/** A dispatch that threw inside toolgate may or may not have sent its request. */
function dispatchFailed (c: SchedulableCall): DispatchOutcome<ActionOutcome> {
  return c.readOnly
    ? { value: { status: 'error', content: errorContent('internal_error', 'The call failed inside toolgate; this read had no effect.'), isError: true, details: { cause: 'internal_error' } }, uncertain: false, closeBatch: false }
    : { value: { status: 'uncertain', content: errorContent('outcome_unknown', UNCERTAIN_MESSAGE), isError: true, details: { cause: 'internal_error' } }, uncertain: true, closeBatch: false }
}
