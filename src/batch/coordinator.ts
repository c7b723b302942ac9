/**
 * The coordinator of a batch's phases. A batch's state is created when the
 * batch starts (the engine's start step, `newBatchState`), or loaded from
 * the run's waiting batch when a batch held for approvals is taken up, on
 * this replica or another (`loadState`, stored-state.ts). `runBatch` gives it a runtime
 * in this process and runs the phase the state names next, and the ones
 * after it, until the batch has its answer: prepare, hold, admit, settle,
 * execute, answer. Its start step is where the engine's fast path shows: a
 * batch prepared before its lease, and admitted in the lease's own step,
 * names `hold` or `settle` and starts there. A phase answers a promise only
 * when it has something to wait for, so such a batch waits on nothing until
 * it runs.
 */
import { performance } from 'node:perf_hooks'
import type { TimerHandle } from '../clock.js'
import { EventRecorder } from '../events/recorder.js'
import { terminateByTimeout } from '../runs/deadline.js'
import { type LeaseKeeper, type SharedLease, releaseAfterFailure } from '../runs/lease.js'
import type { RunRecord } from '../model/run.js'
import { StopSwitch } from '../schedule/types.js'
import { type BatchInfo, ObserverList } from '../telemetry/types.js'
import { openGuards } from '../guards/index.js'
import type { GuardedBatch } from '../guards/types.js'
import type { BatchAnswer, RunDeps } from './engine-types.js'
import { admit, settle } from './phases/admit.js'
import { answer } from './phases/answer.js'
import { execute } from './phases/execute.js'
import { hold } from './phases/hold.js'
import { notePreparation, prepare } from './phases/prepare.js'
import { type BatchRuntime, guardView } from './runtime.js'
import type { BatchState, Prepared, Ready } from './state.js'
import type { BatchEvent } from '../model/result.js'

/** The longest delay a Node timer honours. */
const MAX_TIMER_MS = 2 ** 31 - 1

/** Where a batch runs from: the request that brought it, when one did, and who hears it. */
export interface BatchIo {
  /** Host-visible events as they happen (server-sent events). */
  onEvent?: ((event: BatchEvent) => void) | undefined
  /** Aborted when the client of a streaming request goes away. */
  signal?: AbortSignal | undefined
  /** The request's id and key name, for the batch's log lines; the caller's W3C trace context, continued by its spans. */
  reqId?: string | undefined
  keyName?: string | undefined
  traceparent?: string | undefined
  tracestate?: string | undefined
  /** The lease it shares with other batches of its run (MCP calls that arrive together), when it does. */
  shared?: SharedLease | undefined
}

/**
 * Runs a started batch to its answer on `run` (as the step that took its
 * lease left it). The lease is kept while it runs, and released if a phase
 * throws (a bug must not leave the run leased forever).
 */
export async function runBatch (deps: RunDeps, leases: LeaseKeeper, run: RunRecord, state: BatchState, io: BatchIo, ready?: Ready): Promise<BatchAnswer> {
  const t0 = performance.now()
  const controller = new StopSwitch(deps.clock)
  const recorder = new EventRecorder(state.options.events, io.onEvent)
  if (state.approvals !== undefined) recorder.continueFrom(state.approvals.events)
  const info: BatchInfo = { runId: state.runId, batchId: state.batchId, tenant: state.tenant, reqId: io.reqId, keyName: io.keyName, turn: state.turn, calls: state.calls.length, mode: state.options.toolExecution }
  // The caller's trace context, when it sent one, continues in the batch's spans.
  if (io.traceparent !== undefined) info.traceparent = io.traceparent
  if (io.tracestate !== undefined) info.tracestate = io.tracestate
  const observer = new ObserverList([recorder, deps.telemetry.observeBatch(info)])
  const shared = io.shared
  const base = { deps, controller, batchId: state.batchId, recorder, observer, startedAt: t0, onEvent: io.onEvent, shared }
  const rt: BatchRuntime = { ...base, view: guardView(state, base) }
  // Under a shared lease, the keeper renews the shared lease (from the batch that took it) and stops every batch under it.
  if (shared === undefined) leases.keep(run, rt)
  else {
    if (shared.started()) leases.keep(run, { controller: shared, batchId: shared.id })
    shared.join(controller)
  }
  const signal = io.signal
  const onClientGone = (): void => controller.abort('client_gone')
  signal?.addEventListener('abort', onClientGone, { once: true })
  if (signal?.aborted === true) controller.abort('client_gone')
  try {
    return await runPhases(state, rt, ready)
  } catch (err) {
    observer.batchCompleted('error', performance.now() - t0)
    // A shared lease is released by whoever schedules the batches under it, once none is left.
    if (shared === undefined) await releaseAfterFailure(deps.store, state.runId, state.batchId, deps.logger)
    throw err
  } finally {
    signal?.removeEventListener('abort', onClientGone)
    if (shared === undefined) leases.release(state.runId)
    else {
      shared.leave(controller)
      // Its answer released the shared lease: no longer renewed.
      if (shared.closing !== null && leases.running(state.runId)?.batchId === shared.id) leases.release(state.runId)
    }
  }
}

/** Runs the phase the state names next, and the ones after it, to the batch's answer (or the hold's 202). */
async function runPhases (state: BatchState, rt: BatchRuntime, early: Ready | undefined): Promise<BatchAnswer> {
  // A batch loaded after approvals started when it was first sent.
  if (state.approvals === undefined) rt.recorder.emit({ type: 'batch.started', size: state.calls.length })
  const deadline = startDeadline(state, rt)
  try {
    const starting = start(state, rt, early)
    const ready = starting instanceof Promise ? await starting : starting
    if (state.phase === 'hold') {
      const holding = hold(state, rt, ready)
      const held = holding === null ? null : await holding
      if (held !== null) return held
      state.phase = 'admit'
    }
    if (state.phase === 'admit') {
      state.admitted = await admit(state, rt, ready)
      state.phase = 'settle'
    }
    if (state.phase === 'settle') {
      settle(state, rt, ready, state.admitted)
      state.phase = 'execute'
    }
    if (state.phase === 'execute') {
      const executing = execute(state, rt, ready)
      if (executing !== undefined) await executing
      state.phase = 'answer'
    }
    return await answer(state, rt, ready)
  } finally {
    if (deadline !== null) rt.deps.clock.clearTimeout(deadline)
  }
}

/**
 * The start step: the batch ready for its phases, its calls prepared and
 * its guards opened. A batch that names a later phase than `prepare` has
 * its calls prepared already: the engine's fast path prepared it before its
 * lease (and opened its guards, and, unless a guard may hold it, admitted
 * it in the lease's own step: it starts at `settle`), or it was prepared
 * when first sent, before it waited for approvals (it starts at `admit`).
 * Any other batch is prepared now. Answers a promise only when it prepares.
 */
function start (state: BatchState, rt: BatchRuntime, early: Ready | undefined): Ready | Promise<Ready> {
  const prepared = state.prepared
  if (state.phase !== 'prepare' && prepared !== undefined) {
    // The fast path's preparation is reported as the prepare phase reports its own.
    if (state.approvals === undefined) notePreparation(prepared, rt)
    return early ?? readyFor(rt.deps, state, prepared)
  }
  return prepare(state, rt).then((p) => {
    state.prepared = p
    state.phase = 'hold'
    return readyFor(rt.deps, state, p)
  })
}

/** The batch as its guards see it, and their parts in it. */
export function readyFor (deps: RunDeps, state: Pick<BatchState, 'runId' | 'tenant' | 'batchId' | 'leaseId' | 'blockedBy' | 'turn' | 'identified' | 'scopes' | 'format' | 'calls' | 'approvals'>, prepared: Prepared): Ready {
  const batch: GuardedBatch = {
    runId: state.runId,
    tenant: state.tenant,
    batchId: state.batchId,
    leaseId: state.leaseId ?? state.batchId,
    turn: state.turn,
    requestHash: state.identified.requestHash,
    scopes: state.scopes,
    format: state.format,
    calls: state.calls,
    outcomes: prepared.outcomes,
    fingerprints: prepared.fingerprints,
    decisions: state.approvals?.held.map((h) => h?.decision),
    blockedBy: state.blockedBy
  }
  return { prepared, batch, guards: openGuards(deps.guards, batch) }
}

/**
 * The run's timeoutMs, when it can pass during this batch: nothing more
 * starts, and the run is terminated then and there, not once the calls
 * still running have settled, so it reads `timeout` meanwhile and a cancel
 * that comes after the deadline finds it so.
 */
function startDeadline (state: BatchState, rt: BatchRuntime): TimerHandle | null {
  const { timeoutMs } = state.options.limits
  const remaining = timeoutMs === null ? Infinity : state.createdAt + timeoutMs - rt.deps.clock.now()
  // Node fires a timer of more than 2^31-1 ms at once; a deadline that far off cannot pass during one batch anyway.
  if (remaining > MAX_TIMER_MS) return null
  return rt.deps.clock.setTimeout(() => {
    rt.controller.abort('timeout')
    // Serialized with the batch's own updates: the answer phase sees the run terminated already and reports nothing twice.
    rt.deps.store.updateRun(state.runId, terminateByTimeout).then((u) => {
      if (u.found && u.value) rt.observer.runTerminated('timeout')
    }, () => { /* the answer phase terminates it when the batch settles */ })
  }, Math.max(0, remaining))
}
