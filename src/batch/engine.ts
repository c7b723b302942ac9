import type { WaitingBatch } from '../model/waiting.js'
import { ProblemError } from '../errors.js'
import { requestIdentity } from '../formats/index.js'
import { applyDeadline } from '../runs/deadline.js'
import { LeaseKeeper, type SharedLease, holdsLease, leased, releaseAfterFailure, takeLease } from '../runs/lease.js'
import { ownedRun, resume, runNotFound, terminate } from '../runs/transitions.js'
import type { RunRecord, TerminationReason } from '../model/run.js'
import type { BatchIdEntry } from '../store/types.js'
import { tenantEntry } from '../uncertain/service.js'
import { type RunIdentity, identityOf } from '../model/incarnation.js'
import { WAITING_OWNER } from '../model/waiting.js'
import { registerGuards, startTurn } from '../guards/index.js'
import type { Guard } from '../guards/types.js'
import { recordCancelled } from './cancelled.js'
import { readyFor, runBatch } from './coordinator.js'
import type { BatchAnswer, BatchRequest, EngineDeps, PreparedFirst, RunDeps } from './engine-types.js'
import { type IdentifiedCalls, identifyCalls } from './identify-calls.js'
import { admitInto } from './phases/admit.js'
import { mayHold } from './phases/hold.js'
import { preparableFirst, prepareCalls, sameTools } from './phases/prepare.js'
import { respond } from './respond.js'
import { type Admitted, type Prepared, type Ready, newBatchState } from './state.js'
import { loadState } from './stored-state.js'
import type { BatchEvent } from '../model/result.js'

/** What the step that starts a batch found: it started (the lease taken), or why not. */
type Start =
  | { kind: 'started', run: RunRecord, turn: number, waiting?: WaitingBatch }
  /** Known: answered from its stored answer, or resumed (`run` names the incarnation a resume takes over). */
  | { kind: 'replay', run: RunIdentity }
  /** A new batch, and the lease of the run's last one lapsed: its replica died; the run is taken over first. */
  | { kind: 'lapsed', run: RunIdentity }
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
 * Starts batches and hands them to the coordinator (`coordinator.ts`): a
 * new batch records its id and takes the run's lease in one atomic update
 * (prepared before it and admitted in it when it may be); a batch whose
 * replica died runs again; a batch held for approvals is loaded from its
 * run when it is taken up. One instance per process.
 */
export class BatchEngine {
  readonly #deps: RunDeps
  /** The batches running here, under their runs' leases. */
  readonly #leases: LeaseKeeper
  readonly #unsubscribe: () => void
  /** Tool lists of runs that have one, as last seen here (see #noteTools). */
  readonly #allowedTools = new Map<string, readonly string[]>()

  constructor (deps: EngineDeps) {
    const guards = deps.guards ?? registerGuards({ settings: deps.approvals, store: deps.store, clock: deps.clock, replicaId: deps.replicaId, uncertain: deps.uncertain, keys: deps.keys })
    const without = deps.withoutGuards
    const kept = without === undefined ? guards : guards.filter((g) => !without.includes(g.name))
    this.#deps = { ...deps, guards: deps.moreGuards === undefined ? kept : [...kept, ...deps.moreGuards] }
    this.#leases = new LeaseKeeper(deps.store, deps)
    // A cancel published on any replica (this one included) reaches the batch wherever it runs.
    this.#unsubscribe = deps.store.onCancel((runId, reason) => { this.cancel(runId, reason) })
  }

  /** Stops hearing cancellations published through the store, and renewing leases. */
  close (): void {
    this.#unsubscribe()
    this.#leases.close()
  }

  /** The run-level rules its batches run under, in registration order (the run service resets them on a message). */
  get guards (): readonly Guard[] {
    return this.#deps.guards
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
  async execute (req: BatchRequest, tookOver = false): Promise<BatchAnswer> {
    const { store } = this.#deps
    const preparing = req.preparedFirst ?? this.prepareFirst(req, this.#allowedTools.get(req.runId) ?? null)
    const first = preparing instanceof Promise ? await preparing : preparing
    const identifying = first?.identified ?? identifyCalls(req.calls, requestIdentity(req.format, req.incomplete))
    const calls = identifying instanceof Promise ? await identifying : identifying
    const { requestHash } = calls
    const tokens = (req.usage?.inputTokens ?? 0) + (req.usage?.outputTokens ?? 0)
    // Prepared before the lease when it may be, so that admission goes in the lease's own step; its guards opened then too.
    const allowed = first?.tools ?? null
    const early: Ready | undefined = first?.ready
    if (early !== undefined) early.batch.leaseId = req.shared?.id ?? req.batchId
    const holds = first?.holds ?? false
    let preparedFits = false
    let admitted: Admitted | undefined
    let tools: readonly string[] | null = null
    const stepped = await store.updateRunWithBatchId(req.runId, req.batchId, (run, entry) => {
      preparedFits = false
      admitted = undefined
      const start = this.#start(run, entry, req, requestHash, tokens)
      tools = run.options.tools
      // Prepared for another tool list than the run's (a run created again under its id): prepared again after.
      if (start.kind !== 'started' || early === undefined || !sameTools(tools, allowed)) return start
      preparedFits = true
      // A batch a guard may hold is held before admission (the hold phase).
      if (!holds) admitted = admitInto(run, early.batch, early.guards)
      return start
    })
    this.#noteTools(req.runId, stepped.found ? tools : null)
    const start: Start = stepped.found ? stepped.value : { kind: 'not_found' }
    switch (start.kind) {
      case 'not_found':
      case 'busy':
      case 'reused':
      case 'not_active':
        if (start.kind === 'not_active' && start.terminatedNow) this.#deps.telemetry.runTerminated?.(req.runId, start.reason!, req.batchId, req.reqId)
        throw refusal(start, req)
      case 'waiting':
        return { body: start.body, replayed: true, status: 202, log: { runId: req.runId, batchId: req.batchId, replayed: true, outcome: 'awaiting_approval' } }
      case 'lapsed':
        // Once: taken over, the run's lease is free (or another replica's, valid: busy).
        if (tookOver) throw refusal({ kind: 'busy' }, req)
        await this.#takeOver(start.run)
        return await this.execute(req, true)
      case 'replay': {
        const record = await store.getBatch(req.runId, req.batchId)
        if (record !== undefined) return { body: record.responseJson, replayed: true, log: { runId: req.runId, batchId: req.batchId, replayed: true } }
        await this.#takeOver(start.run)
        return await this.#resume(req, calls)
      }
      case 'started': {
        const state = newBatchState(req, start.run, start.turn, calls)
        if (req.shared !== undefined) state.leaseId = req.shared.id
        // The fast path: prepared before the lease, and admitted in its step unless it may be held; the batch starts after those phases.
        if (preparedFits && early !== undefined) {
          early.batch.turn = start.turn
          state.prepared = early.prepared
          state.phase = 'hold'
          if (admitted !== undefined) {
            state.admitted = admitted
            state.phase = 'settle'
          }
          return await runBatch(this.#deps, this.#leases, start.run, state, req, early)
        }
        return await runBatch(this.#deps, this.#leases, start.run, state, req)
      }
    }
  }

  /**
   * Records a batch of one call that never started: cancelled while it
   * waited for its turn, it is a turn of its run all the same, recorded
   * without the run's lease (`cancelled.ts`). False when nothing was.
   */
  recordCancelled (req: BatchRequest, first: PreparedFirst | undefined): Promise<boolean> {
    return recordCancelled(this.#deps, req, first)
  }

  /**
   * Prepares a batch's calls before it is sent, for a run whose tool list is
   * `tools`, when they may be prepared before the run is read (see
   * `preparableFirst`), and opens its guards (the turn is set once its
   * starting step knows it). Undefined when they may not: the batch is
   * prepared once it started. A promise only when preparation waits.
   */
  prepareFirst (req: BatchRequest, tools: readonly string[] | null): PreparedFirst | undefined | Promise<PreparedFirst | undefined> {
    if (!preparableFirst(this.#deps, req.calls, this.#deps.tools)) return undefined
    const identified = identifyCalls(req.calls, requestIdentity(req.format, req.incomplete))
    if (identified instanceof Promise) return identified.then((i) => this.#prepareIdentified(req, i, tools))
    return this.#prepareIdentified(req, identified, tools)
  }

  #prepareIdentified (req: BatchRequest, identified: IdentifiedCalls, tools: readonly string[] | null): PreparedFirst | Promise<PreparedFirst> {
    const prepared = prepareCalls(this.#deps, req, identified, tools)
    if (prepared instanceof Promise) return prepared.then((p) => this.#preparedFirst(req, identified, tools, p))
    return this.#preparedFirst(req, identified, tools, prepared)
  }

  #preparedFirst (req: BatchRequest, identified: IdentifiedCalls, tools: readonly string[] | null, prepared: Prepared): PreparedFirst {
    // The fields readyFor reads, named: a spread of the request would copy all of it.
    const ready = readyFor(this.#deps, {
      runId: req.runId, tenant: req.tenant, batchId: req.batchId, leaseId: req.shared?.id, blockedBy: req.blockedBy, turn: 0, identified,
      scopes: req.scopes, format: req.format, calls: req.calls, approvals: undefined
    }, prepared)
    return { identified, ready, tools, holds: mayHold(ready.guards, prepared.outcomes.length) }
  }

  /** Keeps the tool list of a run that has one, for preparing its next batch before its lease; most runs allow every tool and keep nothing. */
  #noteTools (runId: string, tools: readonly string[] | null): void {
    this.#allowedTools.delete(runId)
    if (tools === null) return
    if (this.#allowedTools.size >= MAX_TOOL_LISTS) this.#allowedTools.delete(this.#allowedTools.keys().next().value!)
    this.#allowedTools.set(runId, tools)
  }

  /**
   * Takes over a run no valid lease holds (SPEC section 17): the writes its
   * last batch recorded as about to be sent and never answered become
   * unresolved uncertainties of the run (cause `replica_lost`), in one
   * atomic step of the store, before this replica takes the lease. Nothing
   * when a valid lease holds it (the step that follows answers busy).
   */
  async #takeOver (run: RunIdentity): Promise<void> {
    const { store, uncertain, logger, tools } = this.#deps
    const made = await store.takeOverWrites(run)
    if (made === undefined || made.length === 0) return
    logger?.warn({ runId: run.runId, batchId: made[0]!.batchId, lost: made.map((u) => ({ callId: u.callId, operationId: u.operationId, tool: u.tool })) },
      'writes of a lost replica found unanswered: kept as unresolved uncertain writes (replica_lost), never sent again')
    for (const u of made) uncertain?.recover(run.runId, u)
    // The tenant's list (GET /v1/uncertain); the run's own list already holds them.
    store.noteTenantUncertain(run.tenant, made.map((u) => tenantEntry({ runId: run.runId, incarnation: run }, { ...u, cause: u.cause ?? 'replica_lost' }, tools.resolve(u.tool)?.conflictScope === 'tenant'))).catch((err: unknown) => {
      logger?.warn({ runId: run.runId, err: { message: (err as Error).message } }, 'uncertain writes: the store could not be updated')
    })
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
    const resumed = await this.#deps.store.updateRun(req.runId, (run): Extract<Start, { kind: 'started' | 'busy' | 'not_active' | 'waiting' }> => {
      ownedRun(run, req.tenant, req.runId, req.createdAt)
      const now = this.#deps.clock.now()
      if (isWaiting(run, req.batchId)) return { kind: 'waiting', body: this.answerWaiting(run, run.waiting) }
      if (leased(run, now)) return { kind: 'busy' }
      if (run.state !== 'active') return { kind: 'not_active', reason: run.terminationReason, terminatedNow: false }
      takeLease(run, req.batchId, this.#deps, now)
      // Taken up after approvals, then its replica died: it runs again from its decisions, not from a new hold.
      if (run.waiting?.state.batchId === req.batchId) return { kind: 'started', run, turn: run.waiting.state.turn, waiting: structuredClone(run.waiting) }
      return { kind: 'started', run, turn: run.counters.turns }
    })
    const start = resumed.found ? resumed.value : { kind: 'not_found' as const }
    if (start.kind === 'waiting') return { body: start.body, replayed: true, status: 202, log: { runId: req.runId, batchId: req.batchId, replayed: true, outcome: 'awaiting_approval' } }
    if (start.kind !== 'started') throw refusal(start, req)
    const state = start.waiting !== undefined ? loadState(this.#deps, start.run, start.waiting) : newBatchState(req, start.run, start.turn, calls)
    // Loaded after approvals, it runs as when a decision takes it up: this resend's ids and trace context are not passed on.
    return await runBatch(this.#deps, this.#leases, start.run, state, start.waiting !== undefined ? { onEvent: req.onEvent, signal: req.signal } : req)
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
      if (w == null || w.state.batchId !== batchId) return undefined
      const value = step(run, w)
      const now = this.#deps.clock.now()
      const timedOut = applyDeadline(run, now)
      const start = resume(run, w, this.#deps, now)
      return { value, start, timedOut, waiting: structuredClone(w), run }
    })
    if (!taken.found || taken.value === undefined) return undefined
    const { timedOut, ...rest } = taken.value
    if (timedOut) this.#deps.telemetry.runTerminated?.(runId, 'timeout', batchId)
    return rest
  }

  /** Runs a waiting batch this replica took up (`takeUpWaiting` answered `start`), from its stored state: its completed answer. */
  async runTaken (taken: TakenUp<unknown>, onEvent?: (event: BatchEvent) => void): Promise<BatchAnswer> {
    return await runBatch(this.#deps, this.#leases, taken.run, loadState(this.#deps, taken.run, taken.waiting), { onEvent })
  }

  /**
   * What a batch of `run` waiting for approvals, `w`, answers as it stands:
   * its state loaded, answered 202 (a resend, the batch resource, a
   * decision that leaves calls pending).
   */
  answerWaiting (run: Pick<RunRecord, 'runId' | 'tenant' | 'options' | 'createdAt' | 'state' | 'terminationReason' | 'uncertain'>, w: WaitingBatch): string {
    return respond(loadState(this.#deps, run, w), null, { held: { waiting: w, run } })
  }

  /**
   * Releases a shared lease that no batch is under any more and that the
   * last answer kept (calls were waiting to start under it, and did not).
   */
  async releaseShared (shared: SharedLease): Promise<void> {
    if (!shared.taken || shared.inside > 0) return
    const releasing = releaseAfterFailure(this.#deps.store, shared.runId, shared.id, this.#deps.logger)
    shared.releasing(releasing)
    await releasing
    this.forgetShared(shared)
  }

  /** A shared lease was released (by its last answer, or `releaseShared`): it is no longer renewed. */
  forgetShared (shared: SharedLease): void {
    if (this.#leases.running(shared.runId)?.batchId === shared.id) this.#leases.release(shared.runId)
  }

  /** Inside the run's atomic update, with the run's entry for this batch id: record it and take the lease, or say why not. */
  #start (run: RunRecord, entry: BatchIdEntry, req: BatchRequest, requestHash: string, tokens: number): Start {
    ownedRun(run, req.tenant, req.runId, req.createdAt)
    const now = this.#deps.clock.now()
    const known = entry.requestHash
    // A batch under a shared lease joins it where its run's lease is that one's, on this replica.
    const shared = req.shared
    const held = leased(run, now)
    const joins = held && shared !== undefined && holdsLease(run, this.#deps.replicaId, shared.id)
    const busy = held && !joins
    if (known !== undefined) {
      if (known !== requestHash) return { kind: 'reused' }
      if (isWaiting(run, req.batchId)) return { kind: 'waiting', body: this.answerWaiting(run, run.waiting) }
      return busy && run.inFlight!.batchId === req.batchId ? { kind: 'busy' } : { kind: 'replay', run: identityOf(run) }
    }
    // A shared lease of this process that lapsed under its batches: it is lost to them; the next call takes the run over under another.
    if (shared !== undefined && run.inFlight?.batchId === shared.id && !held) return { kind: 'busy' }
    // A lapsed lease (not a waiting batch's): its replica died or stopped; what it was sending is found first.
    if (!busy && !joins && run.inFlight !== null && run.inFlight.owner !== WAITING_OWNER && run.state === 'active') return { kind: 'lapsed', run: identityOf(run) }
    if (run.state !== 'active') return { kind: 'not_active', reason: run.terminationReason, terminatedNow: false }
    // A batch waiting for approvals holds the run, whatever its lease says (the sweep expires it).
    if (busy || run.waiting?.phase === 'awaiting') return { kind: 'busy' }
    // The run limits a new batch meets (the limits guard's): a run past one ends here.
    const stop = startTurn(this.#deps.guards, run, { now, tokens })
    if (stop !== null) {
      terminate(run, stop)
      return { kind: 'not_active', reason: stop, terminatedNow: true }
    }
    run.counters.turns++
    run.counters.totalTokens += tokens
    // A batch taken up after approvals whose replica died, and never resent: this batch replaces it.
    if (run.waiting != null) run.waiting = null
    entry.requestHash = requestHash
    takeLease(run, shared?.id ?? req.batchId, this.#deps, now)
    return { kind: 'started', run, turn: run.counters.turns }
  }
}

/** Whether `batchId` is the batch of `run` waiting for approvals (not yet taken up): then `run.waiting` is it. */
export function isWaiting (run: RunRecord, batchId: string): run is RunRecord & { waiting: WaitingBatch } {
  return run.waiting?.state.batchId === batchId && run.waiting.phase === 'awaiting'
}

/** Most runs whose tool list is kept here. */
const MAX_TOOL_LISTS = 10_000

/** An uncertainty of the run as its tenant's list holds it. */
/** The problem a batch that does not start answers. */
function refusal (start: Exclude<Start, { kind: 'started' | 'replay' | 'waiting' | 'lapsed' }>, req: BatchRequest): ProblemError {
  switch (start.kind) {
    case 'not_found': return runNotFound(req.runId)
    case 'busy': return new ProblemError('run_busy', 'A batch of this run is in flight; wait for its answer.')
    case 'reused': return new ProblemError('batch_id_reused', `Batch ${req.batchId} was sent before with other calls.`)
    case 'not_active': return new ProblemError('run_not_active', `The run is not active (${start.reason ?? 'unknown'}).`, { terminationReason: start.reason })
  }
}
