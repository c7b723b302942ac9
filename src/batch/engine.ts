import { performance } from 'node:perf_hooks'
import { awaitingResponse } from '../approvals/hold.js'
import type { WaitingBatch } from '../approvals/types.js'
import { restoreOutcomes } from '../approvals/waiting.js'
import { ProblemError } from '../errors.js'
import { requestIdentity } from '../formats/index.js'
import { EventRecorder } from '../events/recorder.js'
import { canonicalText } from '../repeat/fingerprint.js'
import { applyDeadline, deadlinePassed } from '../runs/deadline.js'
import { LeaseKeeper, leased, releaseAfterFailure, takeLease } from '../runs/lease.js'
import { ownedRun, resume, runNotFound, terminate } from '../runs/transitions.js'
import type { RunRecord, TerminationReason } from '../runs/types.js'
import { StopSwitch } from '../schedule/types.js'
import type { BatchIdEntry } from '../store/types.js'
import type { BatchInfo } from '../telemetry/types.js'
import { ObserverList } from '../telemetry/types.js'
import { heldIndexes } from '../approvals/waiting.js'
import { BatchRun, type Early } from './batch-run.js'
import type { BatchAnswer, BatchRequest, EngineDeps } from './engine-types.js'
import { type IdentifiedCalls, identifyCalls } from './identify-calls.js'
import { admitInto, preparableFirst, prepareCalls, sameTools } from './start.js'
import type { BatchEvent } from './types.js'

type Begin =
  | { kind: 'started', run: RunRecord, turn: number, waiting?: WaitingBatch }
  | { kind: 'replay' }
  /** The batch waits for approvals: a resend answers where it stands. */
  | { kind: 'waiting', body: string }
  | { kind: 'reused' }
  | { kind: 'busy' }
  | { kind: 'not_found' }
  /** `terminatedNow`: this batch's arrival terminated the run (a limit it would pass). */
  | { kind: 'not_active', reason: TerminationReason | null, terminatedNow: boolean }

/** A waiting batch after `takeUpWaiting`'s step: `start` when this replica took its lease and must run it. */
export interface TakenUp<T> { value: T, start: boolean, waiting: WaitingBatch, run: RunRecord }

/**
 * Runs batches: lease the run, prepare every call, admit them against the
 * run's repeat streak and limits, run the epochs, and answer one result per
 * call in source order. One instance per process.
 */
export class BatchEngine {
  readonly #deps: EngineDeps
  /** The batches running here, under their runs' leases. */
  readonly #leases: LeaseKeeper
  readonly #unsubscribe: () => void
  /** Tool lists of runs that have one, as last seen here (see #noteTools). */
  readonly #allowedTools = new Map<string, readonly string[]>()

  constructor (deps: EngineDeps) {
    this.#deps = deps
    this.#leases = new LeaseKeeper(deps.store, deps)
    // A cancel published on any replica (this one included) reaches the batch wherever it runs.
    this.#unsubscribe = deps.store.onCancel((runId, reason) => { this.cancel(runId, reason) })
  }

  /** Stops hearing cancellations published through the store, and renewing leases. */
  close (): void {
    this.#unsubscribe()
    this.#leases.close()
  }

  /** Batches running in this process. */
  get inFlight (): number {
    return this.#leases.size
  }

  /** Cancels the batch of a run running in this process, if any. */
  cancel (runId: string, reason: 'cancelled' | 'ended' | 'shutdown'): boolean {
    const running = this.#leases.running(runId)
    if (running === undefined) return false
    running.controller.abort(reason)
    return true
  }

  /** Runs a batch, or answers the stored response of one sent before: `body` is the response as JSON text. */
  async execute (req: BatchRequest): Promise<BatchAnswer> {
    const { store } = this.#deps
    const calls = identifyCalls(req.calls, requestIdentity(req.format, req.incomplete))
    const { requestHash } = calls
    const tokens = (req.usage?.inputTokens ?? 0) + (req.usage?.outputTokens ?? 0)
    // Prepared before the lease when it may be, so that admission goes in the lease's own step.
    const allowed = this.#allowedTools.get(req.runId) ?? null
    const prepared = preparableFirst(this.#deps, req, this.#deps.tools) ? await prepareCalls(this.#deps, req, calls, allowed) : undefined
    let early: Early | undefined
    let tools: readonly string[] | null = null
    const begun = await store.updateRunWithBatchId(req.runId, req.batchId, (run, entry) => {
      early = undefined
      const begin = this.#begin(run, entry, req, requestHash, tokens)
      tools = run.options.tools
      // Prepared for another tool list than the run's (a run created again under its id): prepared again after.
      if (begin.kind !== 'started' || prepared === undefined || !sameTools(tools, allowed)) return begin
      early = { prepared }
      // A batch with a call to approve is held before admission (src/approvals).
      if (this.#deps.approvals === undefined || heldIndexes(prepared.outcomes).length === 0) early.admitted = admitInto(run, req.batchId, prepared)
      return begin
    })
    this.#noteTools(req.runId, begun.found ? tools : null)
    const begin: Begin = begun.found ? begun.value : { kind: 'not_found' }
    switch (begin.kind) {
      case 'not_found':
      case 'busy':
      case 'reused':
      case 'not_active':
        if (begin.kind === 'not_active' && begin.terminatedNow) this.#deps.telemetry.runTerminated?.(req.runId, begin.reason!, req.batchId, req.reqId)
        throw refusal(begin, req)
      case 'waiting':
        return { body: begin.body, replayed: true, status: 202, log: { runId: req.runId, batchId: req.batchId, replayed: true, outcome: 'awaiting_approval' } }
      case 'replay': {
        const record = await store.getBatch(req.runId, req.batchId)
        if (record !== undefined) return { body: record.responseJson, replayed: true, log: { runId: req.runId, batchId: req.batchId, replayed: true } }
        return await this.#resume(req, calls)
      }
      case 'started':
        return await this.#run(req, begin.run, begin.turn, calls, early)
    }
  }

  /** Keeps the tool list of a run that has one, for preparing its next batch before its lease; most runs allow every tool and keep nothing. */
  #noteTools (runId: string, tools: readonly string[] | null): void {
    this.#allowedTools.delete(runId)
    if (tools === null) return
    if (this.#allowedTools.size >= MAX_TOOL_LISTS) this.#allowedTools.delete(this.#allowedTools.keys().next().value!)
    this.#allowedTools.set(runId, tools)
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
    const resumed = await this.#deps.store.updateRun(req.runId, (run): Extract<Begin, { kind: 'started' | 'busy' | 'not_active' | 'waiting' }> => {
      ownedRun(run, req.tenant, req.runId)
      const now = Date.now()
      if (run.waiting?.batchId === req.batchId && run.waiting.phase === 'awaiting') return { kind: 'waiting', body: JSON.stringify(awaitingResponse(req.runId, run.waiting, run)) }
      if (leased(run, now)) return { kind: 'busy' }
      if (run.state !== 'active') return { kind: 'not_active', reason: run.terminationReason, terminatedNow: false }
      takeLease(run, req.batchId, this.#deps, now)
      // Taken up after approvals, then its replica died: it runs again from its decisions, not from a new hold.
      if (run.waiting?.batchId === req.batchId) return { kind: 'started', run, turn: run.waiting.turn, waiting: structuredClone(run.waiting) }
      return { kind: 'started', run, turn: run.counters.turns }
    })
    const begin = resumed.found ? resumed.value : { kind: 'not_found' as const }
    if (begin.kind === 'waiting') return { body: begin.body, replayed: true, status: 202, log: { runId: req.runId, batchId: req.batchId, replayed: true, outcome: 'awaiting_approval' } }
    if (begin.kind === 'started' && begin.waiting !== undefined) return await this.#runWaiting(begin.run, begin.waiting, req.onEvent, req.signal)
    if (begin.kind === 'started') return await this.#run(req, begin.run, begin.turn, calls)
    throw refusal(begin, req)
  }

  /**
   * Takes up a batch that waits for approvals, from any request on any
   * replica (src/approvals). `step` runs inside the run's atomic update with
   * the waiting batch (decisions, expiry; a throw changes nothing); when no
   * held call is left pending, or the run is no longer active, this replica
   * takes the lease (`start`): the caller then runs it with `runTaken`.
   * Undefined when the run has no such waiting batch.
   */
  async takeUpWaiting<T> (runId: string, batchId: string, step: (run: RunRecord, waiting: WaitingBatch) => T): Promise<TakenUp<T> | undefined> {
    const taken = await this.#deps.store.updateRun(runId, (run) => {
      const w = run.waiting
      if (w == null || w.batchId !== batchId) return undefined
      const value = step(run, w)
      const now = Date.now()
      const timedOut = applyDeadline(run, now)
      const start = resume(run, w, this.#deps, now)
      return { value, start, timedOut, waiting: structuredClone(w), run }
    })
    if (!taken.found || taken.value === undefined) return undefined
    const { timedOut, ...rest } = taken.value
    if (timedOut) this.#deps.telemetry.runTerminated?.(runId, 'timeout', batchId)
    return rest
  }

  /** Runs a waiting batch this replica took up (`takeUpWaiting` answered `start`): its completed answer. */
  async runTaken (taken: TakenUp<unknown>, onEvent?: (event: BatchEvent) => void): Promise<BatchAnswer> {
    return await this.#runWaiting(taken.run, taken.waiting, onEvent)
  }

  /** Runs a batch taken up after it waited, from its stored calls and decisions; the caller took the lease. */
  async #runWaiting (run: RunRecord, w: WaitingBatch, onEvent?: (event: BatchEvent) => void, signal?: AbortSignal): Promise<BatchAnswer> {
    const approvals = restoreOutcomes(w, this.#deps.tools)
    const req: BatchRequest = { runId: run.runId, tenant: run.tenant, scopes: new Set(w.scopes), batchId: w.batchId, calls: w.calls, approvals }
    if (w.format !== undefined) req.format = w.format
    if (onEvent !== undefined) req.onEvent = onEvent
    if (signal !== undefined) req.signal = signal
    const calls: IdentifiedCalls = { requestHash: w.requestHash, argumentTexts: approvals.outcomes.map((o) => canonicalText(o.arguments ?? null)) }
    return await this.#run(req, run, w.turn, calls)
  }

  /** Inside the run's atomic update, with the run's entry for this batch id: record it and take the lease, or say why not. */
  #begin (run: RunRecord, entry: BatchIdEntry, req: BatchRequest, requestHash: string, tokens: number): Begin {
    ownedRun(run, req.tenant, req.runId)
    const now = Date.now()
    const known = entry.requestHash
    const busy = leased(run, now)
    if (known !== undefined) {
      if (known !== requestHash) return { kind: 'reused' }
      if (run.waiting?.batchId === req.batchId && run.waiting.phase === 'awaiting') return { kind: 'waiting', body: JSON.stringify(awaitingResponse(req.runId, run.waiting, run)) }
      return busy && run.inFlight!.batchId === req.batchId ? { kind: 'busy' } : { kind: 'replay' }
    }
    if (run.state !== 'active') return { kind: 'not_active', reason: run.terminationReason, terminatedNow: false }
    // A batch waiting for approvals holds the run, whatever its lease says (the sweep expires it).
    if (busy || run.waiting?.phase === 'awaiting') return { kind: 'busy' }
    const { limits } = run.options
    let stop: TerminationReason | null = null
    if (deadlinePassed(run, now)) stop = 'timeout'
    else if (limits.maxTurns !== null && run.counters.turns + 1 > limits.maxTurns) stop = 'max_turns'
    else if (limits.maxTotalTokens !== null && run.counters.totalTokens + tokens > limits.maxTotalTokens) stop = 'max_total_tokens'
    if (stop !== null) {
      terminate(run, stop)
      return { kind: 'not_active', reason: stop, terminatedNow: true }
    }
    run.counters.turns++
    run.counters.totalTokens += tokens
    // A batch taken up after approvals whose replica died, and never resent: this batch replaces it.
    if (run.waiting != null) run.waiting = null
    entry.requestHash = requestHash
    takeLease(run, req.batchId, this.#deps, now)
    return { kind: 'started', run, turn: run.counters.turns }
  }

  async #run (req: BatchRequest, run: RunRecord, turn: number, calls: IdentifiedCalls, early?: Early): Promise<BatchAnswer> {
    const { store, telemetry } = this.#deps
    const t0 = performance.now()
    const controller = new StopSwitch()
    this.#leases.keep(run, { controller, batchId: req.batchId })
    const onClientGone = (): void => controller.abort('client_gone')
    req.signal?.addEventListener('abort', onClientGone, { once: true })
    if (req.signal?.aborted === true) controller.abort('client_gone')
    const recorder = new EventRecorder(run.options.events, req.onEvent)
    if (req.approvals !== undefined) recorder.continueFrom(req.approvals.events)
    const info: BatchInfo = { runId: req.runId, batchId: req.batchId, tenant: req.tenant, reqId: req.reqId, keyName: req.keyName, turn, calls: req.calls.length, mode: run.options.toolExecution }
    // The caller's trace context, when it sent one, continues in the batch's spans.
    if (req.traceparent !== undefined) info.traceparent = req.traceparent
    if (req.tracestate !== undefined) info.tracestate = req.tracestate
    const observer = new ObserverList([recorder, telemetry.observeBatch(info)])
    try {
      return await new BatchRun(this.#deps, req, run, turn, calls, controller, recorder, observer, early).execute()
    } catch (err) {
      observer.batchCompleted('error', performance.now() - t0)
      await releaseAfterFailure(store, req.runId, req.batchId)
      throw err
    } finally {
      req.signal?.removeEventListener('abort', onClientGone)
      this.#leases.release(req.runId)
    }
  }
}

/** Most runs whose tool list is kept here. */
const MAX_TOOL_LISTS = 10_000

/** The problem a batch that does not start answers. */
function refusal (begin: Exclude<Begin, { kind: 'started' | 'replay' | 'waiting' }>, req: BatchRequest): ProblemError {
  switch (begin.kind) {
    case 'not_found': return runNotFound(req.runId)
    case 'busy': return new ProblemError('run_busy', 'A batch of this run is in flight; wait for its answer.')
    case 'reused': return new ProblemError('batch_id_reused', `Batch ${req.batchId} was sent before with other calls.`)
    case 'not_active': return new ProblemError('run_not_active', `The run is not active (${begin.reason ?? 'unknown'}).`, { terminationReason: begin.reason })
  }
}
