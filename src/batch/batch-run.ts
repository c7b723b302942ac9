import { performance } from 'node:perf_hooks'
import { holdBatch } from '../approvals/hold.js'
import { recordDecisions } from '../approvals/results.js'
import { executorBodyPrefix } from '../dispatch/executor-body.js'
import { type EventRecorder, round } from '../events/recorder.js'
import { IsoTime } from '../events/iso-time.js'
import { renderMessages } from '../formats/index.js'
import type { PreparationOutcome, PreparedCall } from '../prepare/types.js'
import { type RunIdentity, operationId } from '../receipts/operation-id.js'
import type { CanonicalText } from '../repeat/fingerprint.js'
import type { LoopTerminationReason } from '../repeat/loops.js'
import { policyMessage } from '../repeat/tracker.js'
import { terminateByTimeout } from '../runs/deadline.js'
import { releaseWithAnswer } from '../runs/lease.js'
import { dropWaiting, terminate } from '../runs/transitions.js'
import { addStats, emptyStats } from '../runs/stats.js'
import type { RunRecord, RunStats, TerminationReason } from '../runs/types.js'
import { planEpochs } from '../schedule/plan.js'
import { EpochRunner } from '../schedule/runner.js'
import type { DispatchOutcome, Epoch, RunnerHooks, SchedulableCall, Settlement, StopSwitch } from '../schedule/types.js'
import { type ExecutorFailure, executorFailureOf } from '../telemetry/executor-failure.js'
import type { BatchOutcome, CallInfo, ObserverList } from '../telemetry/types.js'
import type { Admission } from './admit.js'
import { LoopWatch } from './loop-watch.js'
import { type Admitted, type Prepared, admitInto, prepareCalls } from './start.js'
import { UNCERTAIN_MESSAGE, errorContent } from './content.js'
import { type ActionContext, type ActionOutcome, dispatchAction } from './dispatch-action.js'
import { type DispatchContext, dispatchPlain } from './dispatch-call.js'
import type { BatchAnswer, BatchRequest, EngineDeps } from './engine-types.js'
import type { IdentifiedCalls } from './identify-calls.js'
import { blockedResult, callResult, cancelledResult, deniedResult, rejectedResult, terminatedResult, uncertainBlockedResult } from './results.js'
import type { BatchRecord } from '../store/types.js'
import type { BatchResponse, CallResult, PolicyMessage } from './types.js'
import type { UncertainChange } from '../uncertain/admission.js'
import { batchChange, blockers, recordChange } from '../uncertain/batch.js'
import { retryAction } from '../uncertain/retry-action.js'
import type { HeldBack } from '../uncertain/types.js'

/** A batch prepared before its lease was taken, and admitted in the lease's own step when it could be. */
export interface Early { prepared: Prepared, admitted?: Admitted }

/** When calls started, as ISO text. */
const START_TIMES = new IsoTime()
/** Holds a result's place until its call settles; every call settles before the answer is built. */
const PENDING = {} as CallResult
/** The longest delay a Node timer honours. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * One batch that started, from preparation to its answer: every call
 * prepared, admitted against the run's repeat streak and limits, its epochs
 * run and the answer stored. Its state is its own fields and the runner's
 * hooks are its methods, so a batch costs one object where a closure per
 * hook and per stage used to be made.
 */
export class BatchRun implements RunnerHooks {
  readonly #deps: EngineDeps
  readonly #req: BatchRequest
  readonly #run: RunRecord
  readonly #turn: number
  readonly #calls: IdentifiedCalls
  readonly #controller: StopSwitch
  readonly #recorder: EventRecorder
  readonly #observer: ObserverList
  readonly #t0 = performance.now()
  readonly #stats: RunStats = emptyStats()
  /** Filled in place as calls settle; packed (not `new Array(n)`, which is holey), so JSON.stringify takes its fast path. */
  #results: CallResult[] = []
  readonly #policyMessages: PolicyMessage[] = []
  /** By call index: the prepared calls that may be dispatched. */
  readonly #prepared: PreparedCall[] = []
  /** By call index: what observers are told of a call, made once when it starts. */
  readonly #started: CallInfo[] = []
  /** By call index: the canonical text of the prepared arguments, and the fingerprint taken from it. */
  #argumentTexts: CanonicalText[] = []
  #fingerprints: string[] = []
  #epochs: Epoch[] = []
  /** By call index: retries of the run's unresolved uncertain writes (SPEC section 14), and the operation id each dispatched call went under. */
  #held: Array<HeldBack | undefined> = []
  readonly #operations: string[] = []
  #preparedAt = ''
  #closed = false
  /** What the engine did before the lease was taken: preparation, and admission in the lease's step. */
  readonly #early: Early | undefined
  /** The detectors reading results; the reason they stopped the run, if they did. */
  #loops: LoopWatch | null = null
  #loopStop: LoopTerminationReason | null = null
  /** By call index: why its exchange with the executor failed, when it did. */
  readonly #failures: Array<ExecutorFailure | undefined> = []
  /** What every dispatch of the batch shares. */
  readonly #context: DispatchContext
  /** The run, as operation ids name it. */
  readonly #identity: RunIdentity

  /** `observer` tells every observer of the batch, `recorder` (the host's events) among them. */
  constructor (deps: EngineDeps, req: BatchRequest, run: RunRecord, turn: number, calls: IdentifiedCalls, controller: StopSwitch,
    recorder: EventRecorder, observer: ObserverList, early?: Early) {
    this.#early = early
    this.#deps = deps
    this.#req = req
    this.#run = run
    this.#turn = turn
    this.#calls = calls
    this.#controller = controller
    this.#recorder = recorder
    this.#observer = observer
    this.#context = {
      runId: req.runId,
      batchId: req.batchId,
      bodyPrefix: executorBodyPrefix(req.runId, req.batchId),
      http: deps.http,
      onAnswer: (call, answer) => {
        const failure = executorFailureOf(answer, call.tool.action !== null)
        if (failure !== null) this.#failures[call.index] = failure
      }
    }
    this.#identity = { runId: req.runId, tenant: req.tenant, createdAt: run.createdAt }
  }

  /** Runs the batch to its answer. The caller owns the lease and releases it if this throws. */
  async execute (): Promise<BatchAnswer> {
    const req = this.#req
    const observer = this.#observer
    // A batch taken up after approvals started when it was first sent; its calls were prepared then.
    const taken = req.approvals
    if (taken === undefined) this.#recorder.emit({ type: 'batch.started', size: req.calls.length })
    const deadline = this.#startDeadline()
    try {
      const early = this.#early
      const prepared = early?.prepared ?? await prepareCalls(this.#deps, req, this.#calls, this.#run.options.tools)
      const { outcomes, preparationMs } = prepared
      this.#preparedAt = prepared.preparedAt
      if (preparationMs > (this.#deps.slowPreparationMs ?? Infinity)) observer.preparationSlow(preparationMs)
      this.#argumentTexts = prepared.argumentTexts
      this.#fingerprints = prepared.fingerprints
      // Approval is preparation's last stage: a batch with a call to approve stops here, answered 202.
      if (taken === undefined && !this.#controller.aborted) {
        const held = await holdBatch({ deps: this.#deps, req, turn: this.#turn, requestHash: this.#calls.requestHash, events: this.#recorder.events, observer, startedAt: this.#t0 }, outcomes)
        if (held !== null) return held
      }

      // Admitted in the lease's own step, when the engine could prepare the batch before it.
      let admitted = early?.admitted
      if (admitted === undefined) {
        const update = await this.#deps.store.updateRun(req.runId, (r) => admitInto(r, req.batchId, prepared))
        if (update.found) admitted = update.value
      }
      if (admitted !== undefined) this.#held = admitted.held
      const verdict = admitted?.verdict
      // A string: the run left `active` during preparation (cancel, DELETE) and nothing may start.
      const admission = verdict !== undefined && typeof verdict !== 'string' ? verdict : null
      const stoppedBy = typeof verdict === 'string' ? verdict : 'ended'
      if (admission !== null) {
        this.#loops = new LoopWatch({
          observer, stats: this.#stats, messages: this.#policyMessages, outcomes, fingerprints: prepared.fingerprints, pending: PENDING, limits: this.#run.options.limits, start: admitted!.loopStart!, active: admission.termination === null
        })
      }
      const dispatchable = this.#settleUnadmitted(outcomes, admission, stoppedBy)
      if (admission?.termination != null) observer.runTerminated(admission.termination.reason)

      this.#watchLoops()
      if (dispatchable.length > 0) await this.#schedule(dispatchable)
      return await this.#finish()
    } finally {
      if (deadline !== null) clearTimeout(deadline)
    }
  }

  /** Settles every call that will not be dispatched (rejected, terminated, not admitted); answers those that will. */
  #settleUnadmitted (outcomes: readonly PreparationOutcome[], admission: Admission | null, stoppedBy: string): PreparedCall[] {
    const observer = this.#observer
    const stats = this.#stats
    const results = outcomes.map(() => PENDING)
    this.#results = results
    const dispatchable: PreparedCall[] = []
    const notActiveReason = this.#controller.aborted ? String(this.#controller.reason) : stoppedBy
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!
      const decision = admission?.decisions[i]
      const tool = o.tool?.name ?? o.requestedName
      let settled: CallResult | null = null
      if (decision?.cycle !== undefined) this.#loops?.cycleDetected(i, decision.cycle)
      if (decision === undefined) {
        // A rejection answered while the batch waited for approvals stays one.
        settled = !o.ok && this.#req.approvals !== undefined ? rejectedResult(o) : cancelledResult(o, notActiveReason)
      } else if (decision.kind === 'terminated') {
        settled = terminatedResult(o, decision.reason)
        if (decision.count !== null) {
          stats.repeatTerminations++
          observer.repeatDetected({ callId: o.id, tool, known: o.tool !== null, epoch: null }, 'terminated', decision.count)
        }
      } else {
        if (decision.advisory !== null) {
          stats.repeatAdvisories++
          observer.repeatDetected({ callId: o.id, tool, known: o.tool !== null, epoch: null }, 'advisory', decision.advisory)
          this.#policyMessages.push({ type: 'agent_policy', content: policyMessage(tool, decision.advisory) })
        }
        const approval = this.#req.approvals?.decisions[i]
        const held = this.#held[i]
        if (o.ok && approval?.approve === false) {
          settled = deniedResult(o, approval)
        } else if (o.ok && held?.kind === 'blocked') {
          stats.blockedCalls++
          settled = uncertainBlockedResult(o, held.by)
        } else if (o.ok) {
          dispatchable.push(o)
          this.#prepared[i] = o
        } else {
          settled = rejectedResult(o)
        }
      }
      if (settled !== null) {
        results[i] = settled
        observer.callSettled({
          callId: o.id, tool, known: o.tool !== null, epoch: null, status: settled.status, durationMs: null, uncertain: false, readOnly: o.tool?.readOnly ?? false, reason: reasonOf(settled.details)
        })
      }
    }
    return dispatchable
  }

  /**
   * The run's timeoutMs, when it can pass during this batch: nothing more
   * starts, and the run is terminated then and there, not once the calls
   * still running have settled, so it reads `timeout` meanwhile and a cancel
   * that comes after the deadline finds it so.
   */
  #startDeadline (): NodeJS.Timeout | null {
    const run = this.#run
    const { timeoutMs } = run.options.limits
    const remaining = timeoutMs === null ? Infinity : run.createdAt + timeoutMs - Date.now()
    // Node fires a timer of more than 2^31-1 ms at once; a deadline that far off cannot pass during one batch anyway.
    if (remaining > MAX_TIMER_MS) return null
    const runId = this.#req.runId
    const t = setTimeout(() => {
      this.#controller.abort('timeout')
      // Serialized with the batch's own updates: #finish sees the run terminated already and reports nothing twice.
      this.#deps.store.updateRun(runId, terminateByTimeout).then((u) => {
        if (u.found && u.value) this.#observer.runTerminated('timeout')
      }, () => { /* #finish terminates it when the batch settles */ })
    }, Math.max(0, remaining))
    t.unref()
    return t
  }

  /** Plans and runs the epochs of the calls that may be dispatched. */
  async #schedule (calls: readonly PreparedCall[]): Promise<void> {
    const schedulable: SchedulableCall[] = []
    for (const c of calls) schedulable.push({ index: c.index, id: c.id, readOnly: c.tool.readOnly, execution: c.tool.execution, conflictKey: c.conflictKey })
    this.#epochs = planEpochs(schedulable, this.#run.options.toolExecution)
    const runner = new EpochRunner<ActionOutcome>({
      maxConcurrent: this.#run.options.maxConcurrentTools,
      signal: this.#controller,
      hooks: this,
      onDispatchError: dispatchFailed
    })
    await runner.run(this.#epochs, (c, epoch) => this.#dispatch(c, epoch))
  }

  #dispatch (c: SchedulableCall, epoch: number): Promise<DispatchOutcome<ActionOutcome>> {
    const call = this.#prepared[c.index]!
    const callInfo = this.#started[c.index] ?? this.#info(c, epoch)
    const held = this.#held[c.index]
    const opId = this.#operations[c.index] = held?.kind === 'retry' ? held.of.operationId : operationId(this.#identity, call.id, this.#fingerprints[call.index]!)
    const args = this.#argumentTexts[call.index]!
    const headers = this.#observer.executorHeaders(callInfo)
    const argumentsJson = args.plain ? args.text : undefined
    if (call.tool.action === null) return dispatchPlain(this.#context, call, opId, headers, argumentsJson)
    const ctx: ActionContext = { ...this.#context, store: this.#deps.store, tenant: this.#req.tenant, onProjectionFailed: (problem) => this.#observer.projectionFailed(callInfo, problem) }
    const approvedAt = this.#req.approvals?.decisions[call.index]?.at
    if (approvedAt !== undefined) ctx.approvedAt = new Date(approvedAt).toISOString()
    return (held?.kind === 'retry' ? retryAction : dispatchAction)(ctx, call, opId, this.#preparedAt, headers, argumentsJson)
  }

  #info (c: SchedulableCall, epoch: number): CallInfo {
    const tool = this.#prepared[c.index]!.tool
    return { callId: c.id, tool: tool.name, known: true, epoch, description: tool.description }
  }

  /** @internal Runner hook. */
  epochStarted (epoch: number, size: number): void {
    this.#stats.epochs++
    this.#stats.largestEpoch = Math.max(this.#stats.largestEpoch, size)
    this.#observer.epochStarted(epoch, size)
  }

  /** @internal Runner hook. */
  epochSettled (epoch: number, durationMs: number): void {
    this.#observer.epochSettled(epoch, this.#epochs[epoch]?.length ?? 0, durationMs)
    this.#watchLoops()
  }

  /** Lets the detectors that read results see what has settled; one that terminates the run stops every call not yet started. */
  #watchLoops (): void {
    const stop = this.#loops?.walk(this.#results) ?? null
    if (stop === null || this.#closed || this.#controller.aborted) return
    this.#loopStop = stop
    this.#controller.abort(stop)
  }

  /** @internal Runner hook. */
  callStarted (c: SchedulableCall, epoch: number): void {
    this.#observer.callStarted((this.#started[c.index] = this.#info(c, epoch)))
  }

  /** @internal Runner hook: once per call; objects are built whole, without spreads. */
  callSettled (c: SchedulableCall, _epoch: number, s: Settlement<unknown>): void {
    const call = this.#prepared[c.index]!
    const stats = this.#stats
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
      result = callResult(call, value.status, value.content, details, value.isError)
      if (value.status === 'projection_failed') {
        this.#closed = true
        stats.projectionFailures++
      }
      if (value.status === 'uncertain' || details.receipt?.status === 'uncertain') stats.uncertainWrites++
    } else if (s.kind === 'blocked') {
      stats.blockedCalls++
      result = blockedResult(call, s.blockedBy, s.epoch)
    } else if (this.#loopStop !== null) {
      result = terminatedResult(call, this.#loopStop)
    } else {
      const signal = this.#controller
      result = cancelledResult(call, this.#closed || !signal.aborted ? 'batch_closed' : String(signal.reason), s.epoch)
    }
    this.#results[c.index] = result
    const uncertain = result.status === 'uncertain' || result.details.receipt?.status === 'uncertain'
    this.#observer.callSettled({
      callId: c.id, tool: call.tool.name, known: true, epoch: s.epoch, status: result.status, durationMs, uncertain, readOnly: call.tool.readOnly, reason: reasonOf(result.details),
      executor: call.tool.executor.via === undefined ? 'http' : 'mcp', failure: this.#failures[c.index]
    })
  }

  /** Records the batch, releases the lease and builds the response. */
  async #finish (): Promise<BatchAnswer> {
    // What settled after the last epoch (or with no epoch at all) is walked too.
    this.#watchLoops()
    const { store } = this.#deps
    const req = this.#req
    const results = this.#results
    const stats = this.#stats
    const signal = this.#controller
    const closed = this.#closed
    const reason = signal.aborted ? String(signal.reason) : null
    const wallMs = performance.now() - this.#t0
    stats.wallTimeMs += wallMs
    if (req.approvals !== undefined) recordDecisions(results, req.approvals.decisions, stats)
    for (const r of results) {
      if (r === PENDING) throw new Error('a call of the batch never settled')
      stats.callsByStatus[r.status] = (stats.callsByStatus[r.status] ?? 0) + 1
    }

    // Terminal states this batch causes, unless the run already left `active`.
    const ending: TerminationReason | null = closed ? 'projection_failed' : this.#loopStop ?? (reason === 'timeout' ? 'timeout' : null)
    const change = batchChange(req.batchId, results, this.#prepared, this.#operations, this.#held, this.#fingerprints, Date.now())
    await this.#deps.uncertain?.noteAdded(req.runId, change)
    const observer = this.#observer
    let closing: Closing | undefined
    let responseJson = ''
    let stored: boolean
    if (ending === null) {
      // Nothing this batch does ends the run, so no event depends on the run as stored: its last
      // changes to the run, its answer and the release of its lease are one atomic step.
      this.#recorder.emit({ type: 'batch.completed', durationMs: round(wallMs) })
      stored = await releaseWithAnswer(store, req.runId, this.#deps, (r) => {
        closing = this.#close(r, null, change)
        responseJson = this.#respond(closing)
        return this.#record(responseJson)
      })
    } else {
      // The run's termination is an event of the answer, known only once the run is updated: two steps.
      const finalized = await store.updateRun(req.runId, (r) => this.#close(r, ending, change))
      if (finalized.found) closing = finalized.value
      if (closing?.terminatedNow === true) observer.runTerminated(ending)
      this.#recorder.emit({ type: 'batch.completed', durationMs: round(wallMs) })
      responseJson = this.#respond(closing ?? GONE)
      stored = await releaseWithAnswer(store, req.runId, this.#deps, this.#record(responseJson))
    }
    if (closing === undefined) responseJson = this.#respond(GONE)
    const state = closing ?? GONE
    this.#deps.onStats?.(stats)
    const outcome: BatchOutcome = closed ? 'closed' : state.state === 'terminated' ? 'terminated' : reason !== null ? 'cancelled' : 'completed'
    observer.batchCompleted(outcome, wallMs)
    // Not stored: the lease passed to another replica, whose answer is the batch's answer once it has one.
    if (!stored) responseJson = (await store.getBatch(req.runId, req.batchId))?.responseJson ?? responseJson
    if (state.uncertain !== undefined) this.#deps.uncertain?.afterBatch(req.runId, change, state.uncertain, blockers(this.#held))
    return {
      body: responseJson,
      replayed: false,
      log: { runId: req.runId, batchId: req.batchId, turn: this.#turn, calls: results.length, outcome }
    }
  }

  /** Inside the run's atomic update: the batch's last changes to its run (uncertainties, termination, summaries, loop state). */
  #close (r: RunRecord, ending: TerminationReason | null, change: UncertainChange): Closing {
    const kept = recordChange(r, change)
    const terminatedNow = ending !== null && terminate(r, ending)
    r.stats = addStats(r.stats ?? emptyStats(), this.#stats)
    dropWaiting(r, this.#req.batchId)
    this.#loops?.save(r)
    return { state: r.state, terminationReason: r.terminationReason, terminatedNow, uncertain: kept }
  }

  /** The batch's answer as JSON text, the run as `closing` left it. */
  #respond (closing: Closing): string {
    const req = this.#req
    const response: BatchResponse = {
      runId: req.runId,
      batchId: req.batchId,
      turn: this.#turn,
      state: 'completed',
      results: this.#results,
      events: this.#recorder.events,
      policyMessages: this.#policyMessages,
      continue: closing.state === 'active' && !this.#closed,
      run: closing.terminationReason === null ? { state: closing.state } : { state: closing.state, terminationReason: closing.terminationReason }
    }
    if (req.format !== undefined) response.messages = renderMessages(req.format, this.#results, this.#policyMessages)
    return JSON.stringify(response)
  }

  /** What the store keeps of the finished batch, for resends and the run's batch list. */
  #record (responseJson: string): BatchRecord {
    return {
      batchId: this.#req.batchId,
      requestHash: this.#calls.requestHash,
      responseJson,
      completedAt: Date.now(),
      summary: { turn: this.#turn, calls: this.#results.length, statuses: { ...this.#stats.callsByStatus } }
    }
  }
}

/** How the batch left its run. */
interface Closing {
  state: RunRecord['state']
  terminationReason: TerminationReason | null
  terminatedNow: boolean
  uncertain: ReturnType<typeof recordChange> | undefined
}

/** The run was gone when the batch finished. */
const GONE: Closing = { state: 'ended', terminationReason: 'ended', terminatedNow: false, uncertain: undefined }

/** A dispatch that threw inside toolgate may or may not have sent its request. */
function dispatchFailed (c: SchedulableCall): DispatchOutcome<ActionOutcome> {
  return c.readOnly
    ? { value: { status: 'error', content: errorContent('internal_error', 'The call failed inside toolgate; this read had no effect.'), isError: true, details: { cause: 'internal_error' } }, uncertain: false, closeBatch: false }
    : { value: { status: 'uncertain', content: errorContent('outcome_unknown', UNCERTAIN_MESSAGE), isError: true, details: { cause: 'internal_error' } }, uncertain: true, closeBatch: false }
}

/** Why a call did not succeed, for spans and logs: a reason code, a cause or an HTTP status. */
function reasonOf (d: CallResult['details']): string | undefined {
  return d.reason ?? d.cause ?? (d.httpStatus !== undefined && d.httpStatus >= 300 ? String(d.httpStatus) : undefined)
}
