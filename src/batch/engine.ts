import { performance } from 'node:perf_hooks'
import type { ExecutorClient } from '../dispatch/client.js'
import { executorBodyPrefix } from '../dispatch/executor-body.js'
import { ProblemError } from '../errors.js'
import { EventRecorder, round } from '../events/recorder.js'
import { IsoTime } from '../events/iso-time.js'
import type { LineFields } from '../logger.js'
import type { ExternalAuthorizer } from '../prepare/authorize.js'
import { prepareBatch } from '../prepare/pipeline.js'
import type { PreparationContext, PreparationOutcome, PreparedCall, RawCall } from '../prepare/types.js'
import { type RunIdentity, operationId } from '../receipts/operation-id.js'
import { type CanonicalText, canonicalJson, canonicalText, fingerprintOfText } from '../repeat/fingerprint.js'
import { sha256 } from '../repeat/sha256.js'
import { policyMessage } from '../repeat/tracker.js'
import type { RunRecord, RunStats, TerminationReason } from '../runs/types.js'
import { planEpochs } from '../schedule/plan.js'
import { EpochRunner } from '../schedule/runner.js'
import { type DispatchOutcome, type SchedulableCall, type Settlement, type StopSignal, StopSwitch } from '../schedule/types.js'
import { type BatchIdEntry, type Store, holds } from '../store/types.js'
import type { BatchOutcome, CallInfo, Telemetry } from '../telemetry/types.js'
import { ObserverList } from '../telemetry/types.js'
import type { ToolLookup } from '../tools/types.js'
import { admit } from './admit.js'
import { type ActionOutcome, dispatchAction } from './dispatch-action.js'
import { type DispatchContext, dispatchPlain } from './dispatch-call.js'
import { blockedResult, cancelledResult, rejectedResult, terminatedResult } from './results.js'
import { UNCERTAIN_MESSAGE, errorContent } from './content.js'
import type { BatchEvent, BatchResponse, CallResult, PolicyMessage } from './types.js'
import { addStats, emptyStats } from '../runs/stats.js'
import { deadlinePassed, terminateByTimeout } from '../runs/deadline.js'

export interface EngineDeps {
  store: Store
  tools: ToolLookup
  client: ExecutorClient
  telemetry: Telemetry
  authorizer?: ExternalAuthorizer
  /** Identifies this process in a run's lease. */
  replicaId: string
  /** How long a batch lease lasts without renewal. */
  leaseMs: number
  /** Largest arguments of one call, as JSON. */
  maxArgumentBytes: number
  /** Called with each batch's contribution to the summaries. */
  onStats?: (stats: RunStats) => void
}

export interface BatchRequest {
  runId: string
  tenant: string
  scopes: ReadonlySet<string>
  batchId: string
  calls: RawCall[]
  usage?: { inputTokens?: number, outputTokens?: number }
  /** Host-visible events as they happen (server-sent events). */
  onEvent?: (event: BatchEvent) => void
  /** Aborted when the client of a streaming request goes away. */
  signal?: AbortSignal
  /** The caller's W3C trace context, continued by the batch's spans. */
  traceparent?: string
  tracestate?: string
}

type Begin =
  | { kind: 'started', run: RunRecord, turn: number }
  | { kind: 'replay' }
  | { kind: 'reused' }
  | { kind: 'busy' }
  | { kind: 'not_found' }
  /** `terminatedNow`: this batch's arrival terminated the run (a limit it would pass). */
  | { kind: 'not_active', reason: TerminationReason | null, terminatedNow: boolean }

/** What `execute` answers: the response as JSON text, and what the request's log line says of the batch. */
export interface BatchAnswer {
  body: string
  /** The stored answer of a batch sent before. */
  replayed: boolean
  /** runId, batchId and, for a batch that ran, turn, calls, outcome and durationMs; never arguments. */
  log: LineFields
}

/** A running batch's cancel switch. */
interface Control { controller: StopSwitch, batchId: string }

/**
 * Runs batches: lease the run, prepare every call, admit them against the
 * run's repeat streak and limits, run the epochs, and answer one result per
 * call in source order. One instance per process.
 */
export class BatchEngine {
  readonly #deps: EngineDeps
  readonly #controls = new Map<string, Control>()
  readonly #unsubscribe: () => void
  readonly #renewal: NodeJS.Timeout

  constructor (deps: EngineDeps) {
    this.#deps = deps
    // A cancel published on any replica (this one included) reaches the batch wherever it runs.
    this.#unsubscribe = deps.store.onCancel((runId, reason) => { this.cancel(runId, reason) })
    // One timer for the process renews the lease of every batch running here,
    // every third of the lease, rather than a timer made and cleared per batch.
    this.#renewal = setInterval(() => { this.#renewLeases() }, Math.max(MIN_RENEWAL_MS, Math.floor(deps.leaseMs / 3)))
    this.#renewal.unref()
  }

  /** Stops hearing cancellations published through the store, and renewing leases. */
  close (): void {
    this.#unsubscribe()
    clearInterval(this.#renewal)
  }

  /** Batches running in this process. */
  get inFlight (): number {
    return this.#controls.size
  }

  /** Cancels the batch of a run running in this process, if any. */
  cancel (runId: string, reason: 'cancelled' | 'ended' | 'shutdown'): boolean {
    const control = this.#controls.get(runId)
    if (control === undefined) return false
    control.controller.abort(reason)
    return true
  }

  /** Runs a batch, or answers the stored response of one sent before: `body` is the response as JSON text. */
  async execute (req: BatchRequest): Promise<BatchAnswer> {
    const { store } = this.#deps
    const calls = identifyCalls(req.calls)
    const { requestHash } = calls
    const tokens = (req.usage?.inputTokens ?? 0) + (req.usage?.outputTokens ?? 0)
    const begun = await store.updateRunWithBatchId(req.runId, req.batchId, (run, entry) => this.#begin(run, entry, req, requestHash, tokens))
    const begin: Begin = begun.found ? begun.value : { kind: 'not_found' }
    switch (begin.kind) {
      case 'not_found':
      case 'busy':
      case 'reused':
      case 'not_active':
        if (begin.kind === 'not_active' && begin.terminatedNow) this.#deps.telemetry.runTerminated?.(req.runId, begin.reason!, req.batchId)
        throw refusal(begin, req)
      case 'replay': {
        const record = await store.getBatch(req.runId, req.batchId)
        if (record !== undefined) return { body: record.responseJson, replayed: true, log: { runId: req.runId, batchId: req.batchId, replayed: true } }
        return await this.#resume(req, calls)
      }
      case 'started':
        return await this.#run(req, begin.run, begin.turn, calls)
    }
  }

  /**
   * A batch whose id the run knows but whose answer was never stored: the
   * replica running it died before answering. Once its lease has lapsed the
   * batch runs again under the same turn; an action call that was sent
   * before has a receipt (pending receipts are stored before sending) and
   * replays from it, `uncertain` if its answer was never recorded, so no
   * action is sent twice.
   */
  async #resume (req: BatchRequest, calls: IdentifiedCalls): Promise<BatchAnswer> {
    const resumed = await this.#deps.store.updateRun(req.runId, (run): Extract<Begin, { kind: 'started' | 'busy' | 'not_active' }> => {
      if (run.tenant !== req.tenant) throw notFound(req.runId)
      const now = Date.now()
      if (run.inFlight !== null && run.inFlight.leaseExpiresAt > now) return { kind: 'busy' }
      if (run.state !== 'active') return { kind: 'not_active', reason: run.terminationReason, terminatedNow: false }
      run.inFlight = { batchId: req.batchId, owner: this.#deps.replicaId, leaseExpiresAt: now + this.#deps.leaseMs }
      return { kind: 'started', run, turn: run.counters.turns }
    })
    const begin = resumed.found ? resumed.value : { kind: 'not_found' as const }
    if (begin.kind === 'started') return await this.#run(req, begin.run, begin.turn, calls)
    throw refusal(begin, req)
  }

  /** Inside the run's atomic update, with the run's entry for this batch id: record it and take the lease, or say why not. */
  #begin (run: RunRecord, entry: BatchIdEntry, req: BatchRequest, requestHash: string, tokens: number): Begin {
    // Thrown, not returned: a throw leaves another tenant's run untouched (not even its idle timer).
    if (run.tenant !== req.tenant) throw notFound(req.runId)
    const now = Date.now()
    const known = entry.requestHash
    const leased = run.inFlight !== null && run.inFlight.leaseExpiresAt > now
    if (known !== undefined) {
      if (known !== requestHash) return { kind: 'reused' }
      return leased && run.inFlight!.batchId === req.batchId ? { kind: 'busy' } : { kind: 'replay' }
    }
    if (run.state !== 'active') return { kind: 'not_active', reason: run.terminationReason, terminatedNow: false }
    if (leased) return { kind: 'busy' }
    const { limits } = run.options
    let stop: TerminationReason | null = null
    if (deadlinePassed(run, now)) stop = 'timeout'
    else if (limits.maxTurns !== null && run.counters.turns + 1 > limits.maxTurns) stop = 'max_turns'
    else if (limits.maxTotalTokens !== null && run.counters.totalTokens + tokens > limits.maxTotalTokens) stop = 'max_total_tokens'
    if (stop !== null) {
      run.state = 'terminated'
      run.terminationReason = stop
      return { kind: 'not_active', reason: stop, terminatedNow: true }
    }
    run.counters.turns++
    run.counters.totalTokens += tokens
    entry.requestHash = requestHash
    run.inFlight = { batchId: req.batchId, owner: this.#deps.replicaId, leaseExpiresAt: now + this.#deps.leaseMs }
    return { kind: 'started', run, turn: run.counters.turns }
  }

  async #run (req: BatchRequest, run: RunRecord, turn: number, calls: IdentifiedCalls): Promise<BatchAnswer> {
    const { store, telemetry } = this.#deps
    const t0 = performance.now()
    const options = run.options
    const controller = new StopSwitch()
    // Nothing starts once the lease could have passed to another replica (a pause, a store that cannot renew it).
    if (run.inFlight !== null) controller.holdUntil(run.inFlight.leaseExpiresAt - this.#leaseMargin())
    this.#controls.set(req.runId, { controller, batchId: req.batchId })
    const onClientGone = (): void => controller.abort('client_gone')
    req.signal?.addEventListener('abort', onClientGone, { once: true })
    if (req.signal?.aborted === true) controller.abort('client_gone')
    const recorder = new EventRecorder(options.events, req.onEvent)
    const observer = new ObserverList([recorder, telemetry.observeBatch({
      runId: req.runId,
      batchId: req.batchId,
      tenant: req.tenant,
      turn,
      calls: req.calls.length,
      mode: options.toolExecution,
      ...(req.traceparent === undefined ? {} : { traceparent: req.traceparent }),
      ...(req.tracestate === undefined ? {} : { tracestate: req.tracestate })
    })])
    recorder.emit({ type: 'batch.started', size: req.calls.length })
    const deadline = this.#startDeadline(req.runId, run, controller, observer)

    try {
      const preparedAt = PREPARED_TIMES.at(Date.now())
      const ctx: PreparationContext = {
        runId: req.runId,
        tenant: req.tenant,
        allowedTools: options.tools === null ? null : new Set(options.tools),
        scopes: req.scopes,
        maxArgumentBytes: this.#deps.maxArgumentBytes,
        // Parsed from this request's body and hashed already (identifyCalls): nothing else reads them.
        argumentsOwned: true,
        argumentTexts: calls.argumentTexts
      }
      const outcomes = await prepareBatch(req.calls, this.#deps.tools, ctx, this.#deps.authorizer)
      // One serialization of the arguments gives the fingerprint and, mostly, the executor's body too:
      // the request's own, when preparation left them as they came, else the prepared ones'.
      const argumentTexts = outcomes.map((o, i) =>
        this.#leftAsSent(o, req.calls[i]!) ? calls.argumentTexts[i]! : canonicalText(o.arguments ?? null))
      const fingerprints = outcomes.map((o, i) => fingerprintOfText(o.tool?.name ?? o.requestedName, argumentTexts[i]!.text))

      // Admission is atomic with the run: repeat streak, call budget, state.
      const admitted = await store.updateRun(req.runId, (r) => {
        if (r.state !== 'active') return r.terminationReason ?? 'run_not_active'
        // A resumed batch is admitted again from where its first admission started: its calls count once.
        const from = r.admitted?.batchId === req.batchId ? r.admitted : { batchId: req.batchId, repeat: r.repeat, toolCalls: r.counters.toolCalls }
        const a = admit(from.repeat, from.toolCalls, r.options.limits, outcomes.map((o, i) => ({ fingerprint: fingerprints[i]!, tracked: o.tool?.trackExactRepeats ?? true })))
        r.admitted = from
        r.repeat = a.repeat
        r.counters.toolCalls = from.toolCalls + a.admitted
        if (a.termination !== null) {
          r.state = 'terminated'
          r.terminationReason = a.termination.reason
        }
        return a
      })
      // A string: the run left `active` during preparation (cancel, DELETE) and nothing may start.
      const admission = admitted.found && typeof admitted.value !== 'string' ? admitted.value : null
      const stoppedBy = admitted.found && typeof admitted.value === 'string' ? admitted.value : 'ended'

      // Filled in place as calls settle; packed (not `new Array(n)`, which is holey), so JSON.stringify takes its fast path.
      const results: CallResult[] = outcomes.map(() => PENDING)
      const policyMessages: PolicyMessage[] = []
      const dispatchable: PreparedCall[] = []
      const stats = emptyStats()
      const notActiveReason = controller.aborted ? String(controller.reason) : stoppedBy
      for (const [i, o] of outcomes.entries()) {
        const decision = admission?.decisions[i]
        const info = { callId: o.id, tool: o.tool?.name ?? o.requestedName, known: o.tool !== null, epoch: null }
        let settled: CallResult | null = null
        if (decision === undefined) {
          settled = cancelledResult(o, notActiveReason)
        } else if (decision.kind === 'terminated') {
          settled = terminatedResult(o, decision.reason)
          if (decision.count !== null) {
            stats.repeatTerminations++
            observer.repeatDetected(info, 'terminated', decision.count)
          }
        } else {
          if (decision.advisory !== null) {
            stats.repeatAdvisories++
            observer.repeatDetected(info, 'advisory', decision.advisory)
            policyMessages.push({ type: 'agent_policy', content: policyMessage(info.tool, decision.advisory) })
          }
          if (o.ok) dispatchable.push(o)
          else settled = rejectedResult(o)
        }
        if (settled !== null) {
          results[i] = settled
          observer.callSettled({ ...info, status: settled.status, durationMs: null, uncertain: false, readOnly: o.tool?.readOnly ?? false, reason: reasonOf(settled.details) })
        }
      }
      if (admission?.termination != null) observer.runTerminated(admission.termination.reason)

      const closed = await this.#schedule(req, run, dispatchable, preparedAt, fingerprints, argumentTexts, results, stats, observer, controller)
      return await this.#finish(req, turn, calls.requestHash, t0, results, policyMessages, recorder, observer, stats, closed, controller)
    } catch (err) {
      observer.batchCompleted('error', performance.now() - t0)
      // A bug must not leave the run leased forever.
      await store.updateRun(req.runId, (r) => {
        if (r.inFlight?.batchId === req.batchId) r.inFlight = null
      }).catch(() => {})
      throw err
    } finally {
      if (deadline !== null) clearTimeout(deadline)
      req.signal?.removeEventListener('abort', onClientGone)
      this.#controls.delete(req.runId)
    }
  }

  /**
   * The run's timeoutMs, when it can pass during this batch: nothing more
   * starts, and the run is terminated then and there, not once the calls
   * still running have settled, so it reads `timeout` meanwhile and a cancel
   * that comes after the deadline finds it so.
   */
  #startDeadline (runId: string, run: RunRecord, controller: StopSwitch, observer: ObserverList): NodeJS.Timeout | null {
    const { timeoutMs } = run.options.limits
    const remaining = timeoutMs === null ? Infinity : run.createdAt + timeoutMs - Date.now()
    // Node fires a timer of more than 2^31-1 ms at once; a deadline that far off cannot pass during one batch anyway.
    if (remaining > MAX_TIMER_MS) return null
    const t = setTimeout(() => {
      controller.abort('timeout')
      // Serialized with the batch's own updates: #finish sees the run terminated already and reports nothing twice.
      this.#deps.store.updateRun(runId, terminateByTimeout).then((u) => {
        if (u.found && u.value) observer.runTerminated('timeout')
      }, () => { /* #finish terminates it when the batch settles */ })
    }, Math.max(0, remaining))
    t.unref()
    return t
  }

  /** Renews the lease of every batch running in this process. */
  #renewLeases (): void {
    for (const [runId, control] of this.#controls) this.#renewLease(runId, control)
  }

  /**
   * Pushes a running batch's lease on. A cancel published while this replica
   * could not hear it still shows in the run's state; a lease another batch
   * took over means this one must not start anything more.
   */
  #renewLease (runId: string, { controller, batchId }: Control): void {
    const { store, replicaId, leaseMs } = this.#deps
    // Counted from before the store was asked: the lease it writes lasts at least this long.
    const asked = Date.now()
    store.updateRun(runId, (r) => {
      const held = holds(r, replicaId, batchId)
      if (held) r.inFlight!.leaseExpiresAt = Date.now() + leaseMs
      return { state: r.state, held }
    }).then((renewed) => {
      const state = renewed.found ? renewed.value.state : 'ended'
      if (state === 'cancelled' || state === 'ended') controller.abort(state)
      else if (renewed.found && !renewed.value.held) controller.abort('lease_lost')
      else if (renewed.found) controller.holdUntil(asked + leaseMs - this.#leaseMargin())
    }, () => { /* the next renewal retries; the lease it holds runs out meanwhile */ })
  }

  /**
   * How long before its lease expires a batch stops starting calls: room for
   * the clocks of two replicas to differ, and for a call started just before
   * the expiry to be on its way. Renewals come every third of the lease.
   */
  #leaseMargin (): number {
    return Math.floor(this.#deps.leaseMs / 4)
  }

  /**
   * Whether a call's prepared arguments are exactly the request's: the same
   * object, of a tool whose preparation changes nothing in place, with no
   * external authorizer (an in-process one is handed the object).
   */
  #leftAsSent (outcome: PreparationOutcome, raw: RawCall): boolean {
    return outcome.arguments === raw.arguments && (outcome.tool === null || !outcome.tool.preparesInPlace) && this.#deps.authorizer === undefined
  }

  /** Plans and runs the epochs; answers whether a projection failure closed the batch. */
  async #schedule (req: BatchRequest, run: RunRecord, calls: PreparedCall[], preparedAt: string, fingerprints: string[],
    argumentTexts: CanonicalText[], results: CallResult[], stats: RunStats, observer: ObserverList, signal: StopSignal): Promise<boolean> {
    if (calls.length === 0) return false
    const byIndex = new Map<number, PreparedCall>()
    const schedulable: SchedulableCall[] = calls.map((c) => {
      byIndex.set(c.index, c)
      return { index: c.index, id: c.id, readOnly: c.tool.readOnly, execution: c.tool.execution, conflictKey: c.conflictKey }
    })
    const epochs = planEpochs(schedulable, run.options.toolExecution)
    let closed = false
    const info = (c: SchedulableCall, epoch: number): CallInfo =>
      ({ callId: c.id, tool: byIndex.get(c.index)!.tool.name, known: true, epoch })
    // Made once when a call starts, for every hook of its dispatch.
    const started = new Array<CallInfo>(req.calls.length)

    // Once per call: objects are built whole, without spreads.
    const settle = (c: SchedulableCall, s: Settlement<unknown>): void => {
      const call = byIndex.get(c.index)!
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
          closed = true
          stats.projectionFailures++
        }
        if (value.status === 'uncertain' || details.receipt?.status === 'uncertain') stats.uncertainWrites++
      } else if (s.kind === 'blocked') {
        stats.blockedCalls++
        result = blockedResult(call, s.blockedBy, s.epoch)
      } else {
        result = cancelledResult(call, closed || !signal.aborted ? 'batch_closed' : String(signal.reason), s.epoch)
      }
      results[c.index] = result
      const uncertain = result.status === 'uncertain' || result.details.receipt?.status === 'uncertain'
      observer.callSettled({
        callId: c.id, tool: call.tool.name, known: true, epoch: s.epoch, status: result.status, durationMs, uncertain, readOnly: call.tool.readOnly, reason: reasonOf(result.details)
      })
    }

    const runner = new EpochRunner<ActionOutcome>({
      maxConcurrent: run.options.maxConcurrentTools,
      signal,
      hooks: {
        epochStarted: (e, n) => {
          stats.epochs++
          stats.largestEpoch = Math.max(stats.largestEpoch, n)
          observer.epochStarted(e, n)
        },
        epochSettled: (e, d) => observer.epochSettled(e, epochs[e]?.length ?? 0, d),
        callStarted: (c, e) => observer.callStarted((started[c.index] = info(c, e))),
        callSettled: (c, _e, s) => settle(c, s)
      },
      // A dispatch that threw inside toolgate may or may not have sent its request.
      onDispatchError: (c) => c.readOnly
        ? { value: { status: 'error', content: errorContent('internal_error', 'The call failed inside toolgate; this read had no effect.'), isError: true, details: { cause: 'internal_error' } }, uncertain: false, closeBatch: false }
        : { value: { status: 'uncertain', content: errorContent('outcome_unknown', UNCERTAIN_MESSAGE), isError: true, details: { cause: 'internal_error' } }, uncertain: true, closeBatch: false }
    })

    const bodyPrefix = executorBodyPrefix(req.runId, req.batchId)
    const identity: RunIdentity = { runId: req.runId, tenant: req.tenant, createdAt: run.createdAt }
    const dispatch = (c: SchedulableCall, epoch: number): Promise<DispatchOutcome<ActionOutcome>> => {
      const call = byIndex.get(c.index)!
      const callInfo = started[c.index] ?? info(c, epoch)
      const opId = operationId(identity, call.id, fingerprints[call.index]!)
      const args = argumentTexts[call.index]!
      const ctx: DispatchContext = {
        runId: req.runId,
        batchId: req.batchId,
        bodyPrefix,
        client: this.#deps.client,
        headers: observer.executorHeaders(callInfo),
        argumentsJson: args.plain ? args.text : undefined
      }
      if (call.tool.action === null) return dispatchPlain(ctx, call, opId)
      return dispatchAction({ ...ctx, store: this.#deps.store, tenant: req.tenant, onProjectionFailed: (problem) => observer.projectionFailed(callInfo, problem) }, call, opId, preparedAt)
    }

    await runner.run(epochs, dispatch)
    return closed
  }

  /** Records the batch, releases the lease and builds the response. */
  async #finish (req: BatchRequest, turn: number, requestHash: string, t0: number, results: CallResult[], policyMessages: PolicyMessage[],
    recorder: EventRecorder, observer: ObserverList, stats: RunStats, closed: boolean, signal: StopSignal): Promise<BatchAnswer> {
    const { store } = this.#deps
    const reason = signal.aborted ? String(signal.reason) : null
    const wallMs = performance.now() - t0
    stats.wallTimeMs += wallMs
    for (const r of results) {
      if (r === PENDING) throw new Error('a call of the batch never settled')
      stats.callsByStatus[r.status] = (stats.callsByStatus[r.status] ?? 0) + 1
    }

    // Terminal states this batch causes, unless the run already left `active`.
    const ending: TerminationReason | null = closed ? 'projection_failed' : reason === 'timeout' ? 'timeout' : null
    const finalized = await store.updateRun(req.runId, (r) => {
      let terminatedNow = false
      if (ending !== null && r.state === 'active') {
        r.state = 'terminated'
        r.terminationReason = ending
        terminatedNow = true
      }
      r.stats = addStats(r.stats ?? emptyStats(), stats)
      return { state: r.state, terminationReason: r.terminationReason, terminatedNow }
    })
    const state = finalized.found ? finalized.value : { state: 'ended' as const, terminationReason: 'ended' as const, terminatedNow: false }
    if (state.terminatedNow) observer.runTerminated(ending!)
    this.#deps.onStats?.(stats)

    const outcome: BatchOutcome = closed ? 'closed' : state.state === 'terminated' ? 'terminated' : reason !== null ? 'cancelled' : 'completed'
    observer.batchCompleted(outcome, wallMs)
    recorder.emit({ type: 'batch.completed', durationMs: round(wallMs) })
    const response: BatchResponse = {
      runId: req.runId,
      batchId: req.batchId,
      turn,
      results,
      events: recorder.events,
      policyMessages,
      continue: state.state === 'active' && !closed,
      run: state.terminationReason === null ? { state: state.state } : { state: state.state, terminationReason: state.terminationReason }
    }
    let responseJson = JSON.stringify(response)
    // The answer is stored as the lease is released: a resend finds one or the other.
    const stored = await store.completeBatch(req.runId, this.#deps.replicaId, { batchId: req.batchId, requestHash, responseJson, completedAt: Date.now() })
    // Not stored: the lease passed to another replica, whose answer is the batch's answer once it has one.
    if (!stored) responseJson = (await store.getBatch(req.runId, req.batchId))?.responseJson ?? responseJson
    return {
      body: responseJson,
      replayed: false,
      log: { runId: req.runId, batchId: req.batchId, turn, calls: results.length, outcome, durationMs: round(wallMs) }
    }
  }
}

/** When calls started, as ISO text. */
const START_TIMES = new IsoTime()
/** When batches were prepared, as ISO text. */
const PREPARED_TIMES = new IsoTime()
/** Holds a result's place until its call settles; every call settles before the answer is built. */
const PENDING = {} as CallResult

/** Leases are renewed every third of their length, but never more often than this. */
const MIN_RENEWAL_MS = 100

/** The longest delay a Node timer honours. */
const MAX_TIMER_MS = 2 ** 31 - 1

/** The problem a batch that does not start answers. */
function refusal (begin: Exclude<Begin, { kind: 'started' | 'replay' }>, req: BatchRequest): ProblemError {
  switch (begin.kind) {
    case 'not_found': return notFound(req.runId)
    case 'busy': return new ProblemError('run_busy', 'A batch of this run is in flight; wait for its answer.')
    case 'reused': return new ProblemError('batch_id_reused', `Batch ${req.batchId} was sent before with other calls.`)
    case 'not_active': return new ProblemError('run_not_active', `The run is not active (${begin.reason ?? 'unknown'}).`, { terminationReason: begin.reason })
  }
}

function notFound (runId: string): ProblemError {
  return new ProblemError('run_not_found', `No run ${runId}`)
}

/** Why a call did not succeed, for spans and logs: a reason code, a cause or an HTTP status. */
function reasonOf (d: CallResult['details']): string | undefined {
  return d.reason ?? d.cause ?? (d.httpStatus !== undefined && d.httpStatus >= 300 ? String(d.httpStatus) : undefined)
}

/** A batch's calls as identified on arrival. */
interface IdentifiedCalls {
  /** Tells a resend of these calls from other calls under the same batch id. */
  requestHash: string
  /** Each call's raw arguments (`arguments ?? null`) as canonical text. */
  argumentTexts: CanonicalText[]
}

/**
 * Identifies a batch's calls, so a reused batch id with other calls is
 * caught: a hash of the JCS form of `[[id, name, arguments ?? null], ...]`,
 * written from each call's canonical arguments, which preparation measures
 * then instead of serializing the arguments once more.
 */
export function identifyCalls (calls: readonly RawCall[]): IdentifiedCalls {
  const argumentTexts = calls.map((c) => canonicalText(c.arguments ?? null))
  let text = '['
  for (const [i, c] of calls.entries()) {
    text += `${i > 0 ? ',' : ''}[${canonicalJson(c.id)},${canonicalJson(c.name)},${argumentTexts[i]!.text}]`
  }
  return { requestHash: sha256(text + ']', 'base64url').slice(0, 22), argumentTexts }
}
