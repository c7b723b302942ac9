/**
 * What a started batch has only while it runs in this process, beside its
 * `BatchState`: the engine's dependencies, its stop switch (under the run's
 * lease), the host's events and every observer, and the batch as its
 * guards see it. The phases take both; a batch loaded on another replica
 * gets a runtime of its own there.
 */
import type { EventRecorder } from '../events/recorder.js'
import type { BatchGuard, GuardRuntime } from '../guards/types.js'
import type { RunningBatch, SharedLease } from '../runs/lease.js'
import type { StopSwitch } from '../schedule/types.js'
import type { ObserverList } from '../telemetry/types.js'
import type { BatchState } from './state.js'
import type { BatchEvent } from '../model/result.js'
import type { RunDeps } from './engine-types.js'

/** A batch's life in this process: it is the lease keeper's running batch (its stop switch and id). */
export interface BatchRuntime extends RunningBatch {
  /** The batch's own stop switch (a shared lease stops it with the others under it). */
  controller: StopSwitch
  /** The lease the batch shares with other batches of its run, when it does (MCP calls that arrive together). */
  shared: SharedLease | undefined
  deps: RunDeps
  /** The host's events, numbered; the answer holds them. */
  recorder: EventRecorder
  /** Every observer of the batch, `recorder` among them. */
  observer: ObserverList
  /** When the batch started here (performance.now()). */
  startedAt: number
  /** Host-visible events as they happen (server-sent events). */
  onEvent: ((event: BatchEvent) => void) | undefined
  /** The batch as its guards' hooks see it. */
  view: GuardRuntime
}

/**
 * The batch as its guards see it: its observers, figures and messages, its
 * events, whether it was stopped. A class rather than an object literal
 * with a getter: V8 builds such a literal on a slow path (about 1.1 µs
 * against 45 ns here, measured in isolation), and this is made once per
 * batch; the events and the stop switch are read through private fields,
 * so the view makes no closures either.
 */
class GuardView implements GuardRuntime {
  readonly observer: GuardRuntime['observer']
  readonly stats: GuardRuntime['stats']
  readonly policyMessages: GuardRuntime['policyMessages']
  readonly onEvent: GuardRuntime['onEvent']
  readonly startedAt: number
  readonly #recorder: EventRecorder
  readonly #controller: StopSwitch

  constructor (state: BatchState, rt: Omit<BatchRuntime, 'view'>) {
    this.observer = rt.observer
    this.stats = state.stats
    this.policyMessages = state.policyMessages
    this.onEvent = rt.onEvent
    this.startedAt = rt.startedAt
    this.#recorder = rt.recorder
    this.#controller = rt.controller
  }

  get events (): readonly BatchEvent[] { return this.#recorder.events }

  stopped (): boolean { return this.#controller.aborted }
}

/** The batch as its guards see it (`GuardView`). */
export function guardView (state: BatchState, rt: Omit<BatchRuntime, 'view'>): GuardRuntime {
  return new GuardView(state, rt)
}

/**
 * Lets the guards that read results see what has settled (after each epoch,
 * and before the answer); one that terminates the run stops every call not
 * yet started. Every such guard walks, whichever stops first.
 */
export function watchGuards (state: BatchState, rt: BatchRuntime, guards: readonly BatchGuard[]): void {
  let stop = null
  for (const g of guards) {
    if (g.afterEpoch === undefined) continue
    const s = g.afterEpoch(state.results)
    stop ??= s
  }
  if (stop === null || state.closed || rt.controller.aborted) return
  state.stoppedBy = stop
  rt.controller.abort(stop)
}
