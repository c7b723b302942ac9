/**
 * What a started batch has only while it runs in this process, beside its
 * `BatchState`: the engine's dependencies, its stop switch (under the run's
 * lease), the host's events and every observer, and the detectors that read
 * results. The phases take both; a batch loaded on another replica gets a
 * runtime of its own there.
 */
import type { EventRecorder } from '../events/recorder.js'
import type { RunningBatch } from '../runs/lease.js'
import type { ObserverList } from '../telemetry/types.js'
import type { BatchState } from './state.js'
import type { BatchEvent } from '../model/result.js'
import type { EngineDeps } from './engine-types.js'
import type { LoopWatch } from './loop-watch.js'

/** A batch's life in this process: it is the lease keeper's running batch (its stop switch and id). */
export interface BatchRuntime extends RunningBatch {
  deps: EngineDeps
  /** The host's events, numbered; the answer holds them. */
  recorder: EventRecorder
  /** Every observer of the batch, `recorder` among them. */
  observer: ObserverList
  /** When the batch started here (performance.now()). */
  startedAt: number
  /** Host-visible events as they happen (server-sent events). */
  onEvent: ((event: BatchEvent) => void) | undefined
  /** The detectors reading results, from admission on. */
  loops: LoopWatch | null
}

/** Lets the detectors that read results see what has settled; one that terminates the run stops every call not yet started. */
export function watchLoops (state: BatchState, rt: BatchRuntime): void {
  const stop = rt.loops?.walk(state.results) ?? null
  if (stop === null || state.closed || rt.controller.aborted) return
  state.loopStop = stop
  rt.controller.abort(stop)
}
