import { performance } from 'node:perf_hooks'
import { holdBatch } from '../approvals/hold.js'
import { deniedResult, recordDecisions } from '../approvals/results.js'
import { executorBodyPrefix } from '../dispatch/executor-body.js'
import { type EventRecorder, round } from '../events/recorder.js'
import { IsoTime } from '../events/iso-time.js'
import { renderMessages } from '../formats/index.js'
import { rejectIncomplete } from '../formats/incomplete.js'
import { prepareBatch } from '../prepare/pipeline.js'
import type { PreparationOutcome, PreparedCall, RawCall } from '../prepare/types.js'
import { type RunIdentity, operationId } from '../receipts/operation-id.js'
import { type CanonicalText, canonicalText } from '../repeat/fingerprint.js'
import { callFingerprint } from '../repeat/ignore.js'
import type { LoopState, LoopTerminationReason } from '../repeat/loops.js'
import { policyMessage } from '../repeat/tracker.js'
import { terminateByTimeout } from '../runs/deadline.js'
import { addStats, emptyStats } from '../runs/stats.js'
import type { RunRecord, RunStats, TerminationReason } from '../runs/types.js'
import { planEpochs } from '../schedule/plan.js'
import { EpochRunner } from '../schedule/runner.js'
import type { DispatchOutcome, Epoch, RunnerHooks, SchedulableCall, Settlement, StopSwitch } from '../schedule/types.js'
import type { BatchOutcome, CallInfo, ObserverList } from '../telemetry/types.js'
import { admit, type Admission } from './admit.js'
import { LoopWatch, admitLoops } from './loop-watch.js'
import { UNCERTAIN_MESSAGE, errorContent } from './content.js'
import { type ActionContext, type ActionOutcome, dispatchAction } from './dispatch-action.js'
import { type DispatchContext, dispatchPlain } from './dispatch-call.js'
import type { BatchAnswer, BatchRequest, EngineDeps, IdentifiedCalls } from './engine.js'
import { blockedResult, cancelledResult, rejectedResult, terminatedResult } from './results.js'
import type { BatchResponse, CallResult, PolicyMessage } from './types.js'
import { batchChange, blockedByUncertainty, blockers, recordChange, weighCalls } from '../uncertain/batch.js'
import { retryAction } from '../uncertain/retry-action.js'
import type { HeldBack } from '../uncertain/types.js'

/** When calls started, as ISO text. */
const START_TIMES = new IsoTime()
/** When batches were prepared, as ISO text. */
const PREPARED_TIMES = new IsoTime()
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
  /** The loop state admission started from, and the detectors reading results; the reason they stopped the run, if they did. */
  #loopStart: LoopState | null = null
  #loops: LoopWatch | null = null
  #loopStop: LoopTerminationReason | null = null
  /** What every dispatch of the batch shares. */
  readonly #context: DispatchContext
  /** The run, as operation ids name it. */
  readonly #identity: RunIdentity

  /** `observer` tells every observer of the batch, `recorder` (the host's events) among them. */
  constructor (deps: EngineDeps, req: BatchRequest, run: RunRecord, turn: number, calls: IdentifiedCalls, controller: StopSwitch,
    recorder: EventRecorder, observer: ObserverList) {
    this.#deps = deps
    this.#req = req
    this.#run = run
    this.#turn = turn
    this.#calls = calls
    this.#controller = controller
    this.#recorder = recorder
    this.#observer = observer
    this.#context = { runId: req.runId, batchId: req.batchId, bodyPrefix: executorBodyPrefix(req.runId, req.batchId), http: deps.http }
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
      this.#preparedAt = PREPARED_TIMES.at(Date.now())
      const options = this.#run.options
      const preparing = performance.now()
      const outcomes = taken?.outcomes ?? (req.incomplete === true ? rejectIncomplete(req.calls) : await prepareBatch(req.calls, this.#deps.tools, {
        runId: req.runId,
        tenant: req.tenant,
        allowedTools: options.tools === null ? null : new Set(options.tools),
        scopes: req.scopes,
        maxArgumentBytes: this.#deps.maxArgumentBytes,
        // Parsed from this request's body and hashed already (identifyCalls): nothing else reads them.
        argumentsOwned: true,
        argumentTexts: this.#calls.argumentTexts
      }, this.#deps.authorizer))
      const preparationMs = performance.now() - preparing
      if (preparationMs > (this.#deps.slowPreparationMs ?? Infinity)) observer.preparationSlow(preparationMs)
      // One serialization of the arguments gives the fingerprint and, mostly, the executor's body too:
      // the request's own, when preparation left them as they came, else the prepared ones'.
      const argumentTexts: CanonicalText[] = []
      const fingerprints: string[] = []
      for (let i = 0; i < outcomes.length; i++) {
        const o = outcomes[i]!
        const text = this.#leftAsSent(o, req.calls[i]!) ? this.#calls.argumentTexts[i]! : canonicalText(o.arguments ?? null)
        argumentTexts.push(text)
        fingerprints.push(callFingerprint(o.tool?.name ?? o.requestedName, o.tool?.ignoreArguments, o.arguments, text.text))
      }
      this.#argumentTexts = argumentTexts
      this.#fingerprints = fingerprints
      // Approval is preparation's last stage: a batch with a call to approve stops here, answered 202.
      if (taken === undefined && !this.#controller.aborted) {
        const held = await holdBatch({ deps: this.#deps, req, turn: this.#turn, requestHash: this.#calls.requestHash, events: this.#recorder.events, observer, startedAt: this.#t0 }, outcomes)
        if (held !== null) return held
      }

      const admitted = await this.#deps.store.updateRun(req.runId, (r) => this.#admit(r, outcomes))
      // A string: the run left `active` during preparation (cancel, DELETE) and nothing may start.
      const admission = admitted.found && typeof admitted.value !== 'string' ? admitted.value : null
      const stoppedBy = admitted.found && typeof admitted.value === 'string' ? admitted.value : 'ended'
      if (admission !== null) this.#loops = new LoopWatch({ observer, stats: this.#stats, messages: this.#policyMessages, outcomes, fingerprints, pending: PENDING, limits: options.limits, start: this.#loopStart!, active: admission.termination === null })
      const dispatchable = this.#settleUnadmitted(outcomes, admission, stoppedBy)
      if (admission?.termination != null) observer.runTerminated(admission.termination.reason)

      this.#watchLoops()
      if (dispatchable.length > 0) await this.#schedule(dispatchable)
      return await this.#finish()
    } finally {
      if (deadline !== null) clearTimeout(deadline)
    }
  }

  /** Inside the run's atomic update: the repeat streak, the call budget and the state decide which calls go on. */
  #admit (r: RunRecord, outcomes: readonly PreparationOutcome[]): Admission | TerminationReason | 'run_not_active' {
    if (r.state !== 'active') return r.terminationReason ?? 'run_not_active'
    const req = this.#req
    // A resumed batch is admitted again from where its first admission started: its calls count once.
    const from = r.admitted?.batchId === req.batchId ? r.admitted : { batchId: req.batchId, repeat: r.repeat, toolCalls: r.counters.toolCalls }
    const a = admit(from.repeat, from.toolCalls, r.options.limits, outcomes.map((o, i) => ({ fingerprint: this.#fingerprints[i]!, tracked: o.tool?.trackExactRepeats ?? true })))
    this.#loopStart = admitLoops(r, from, a, outcomes, this.#fingerprints)
    r.admitted = from
    this.#held = weighCalls(r.uncertain, outcomes, this.#fingerprints)
    r.repeat = a.repeat
    r.counters.toolCalls = from.toolCalls + a.admitted
    if (a.termination !== null) {
      r.state = 'terminated'
      r.terminationReason = a.termination.reason
    }
    return a
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
          settled = blockedByUncertainty(o, held.by)
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

  /**
   * Whether a call's prepared arguments are exactly the request's: the same
   * object, of a tool whose preparation changes nothing in place, with no
   * external authorizer (an in-process one is handed the object).
   */
  #leftAsSent (outcome: PreparationOutcome, raw: RawCall): boolean {
    return outcome.arguments === raw.arguments && (outcome.tool === null || !outcome.tool.preparesInPlace) && this.#deps.authorizer === undefined
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
    return { callId: c.id, tool: this.#prepared[c.index]!.tool.name, known: true, epoch }
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
      if (call.tool.name !== call.requestedName) details.tool = call.tool.name
      result = { callId: call.id, name: call.requestedName, status: value.status, content: value.content, isError: value.isError, details }
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
      callId: c.id, tool: call.tool.name, known: true, epoch: s.epoch, status: result.status, durationMs, uncertain, readOnly: call.tool.readOnly, reason: reasonOf(result.details)
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
    const finalized = await store.updateRun(req.runId, (r) => {
      const kept = recordChange(r, change)
      let terminatedNow = false
      if (ending !== null && r.state === 'active') {
        r.state = 'terminated'
        r.terminationReason = ending
        terminatedNow = true
      }
      r.stats = addStats(r.stats ?? emptyStats(), stats)
      // Its answer is about to be stored: a batch that waited for approvals leaves the record.
      if (r.waiting?.batchId === req.batchId) r.waiting = null
      this.#loops?.save(r)
      return { state: r.state, terminationReason: r.terminationReason, terminatedNow, uncertain: kept }
    })
    const state = finalized.found ? finalized.value : { state: 'ended' as const, terminationReason: 'ended' as const, terminatedNow: false, uncertain: undefined }
    const observer = this.#observer
    if (state.terminatedNow) observer.runTerminated(ending!)
    this.#deps.onStats?.(stats)

    const outcome: BatchOutcome = closed ? 'closed' : state.state === 'terminated' ? 'terminated' : reason !== null ? 'cancelled' : 'completed'
    observer.batchCompleted(outcome, wallMs)
    this.#recorder.emit({ type: 'batch.completed', durationMs: round(wallMs) })
    const response: BatchResponse = {
      runId: req.runId,
      batchId: req.batchId,
      turn: this.#turn,
      state: 'completed',
      results,
      events: this.#recorder.events,
      policyMessages: this.#policyMessages,
      continue: state.state === 'active' && !closed,
      run: state.terminationReason === null ? { state: state.state } : { state: state.state, terminationReason: state.terminationReason }
    }
    if (req.format !== undefined) response.messages = renderMessages(req.format, results, this.#policyMessages)
    let responseJson = JSON.stringify(response)
    // The answer is stored as the lease is released: a resend finds one or the other.
    const stored = await store.completeBatch(req.runId, this.#deps.replicaId, {
      batchId: req.batchId, requestHash: this.#calls.requestHash, responseJson, completedAt: Date.now(), summary: { turn: this.#turn, calls: results.length, statuses: { ...stats.callsByStatus } }
    })
    // Not stored: the lease passed to another replica, whose answer is the batch's answer once it has one.
    if (!stored) responseJson = (await store.getBatch(req.runId, req.batchId))?.responseJson ?? responseJson
    if (state.uncertain !== undefined) this.#deps.uncertain?.afterBatch(req.runId, change, state.uncertain, blockers(this.#held))
    return {
      body: responseJson,
      replayed: false,
      log: { runId: req.runId, batchId: req.batchId, turn: this.#turn, calls: results.length, outcome }
    }
  }
}

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
