import { performance } from 'node:perf_hooks'
import type { DispatchOutcome, Epoch, RunnerHooks, SchedulableCall, Settlement, StopSignal, Wait } from './types.js'

/** Sends one call; the runner settles it with the outcome. */
export type Dispatch<T> = (call: SchedulableCall, epoch: number) => Promise<DispatchOutcome<T>>

export interface RunnerOptions<T> {
  /** Most calls running at once inside an epoch. */
  maxConcurrent: number
  /** Aborting stops anything not yet started from starting (SPEC section 5, "Cancellation"). */
  signal?: StopSignal
  hooks?: RunnerHooks
  /** Turns a dispatch that threw into an outcome, so every call still settles once. */
  onDispatchError: (call: SchedulableCall, err: unknown) => DispatchOutcome<T>
}

interface Uncertain { index: number, id: string }

/**
 * Runs planned epochs one after another. Inside an epoch it is
 * work-conserving: whenever a slot is free it starts the first call, in
 * source order, whose conflict key is not held by a running call, so calls
 * sharing a key run one at a time in source order. Uncertain writes block
 * later writes; cancellation and a closed batch stop every call not yet
 * started, in this epoch and the later ones.
 *
 * Every call settles exactly once, through the `callSettled` hook and in the
 * array `run` resolves with. A hook that throws stops the batch like a
 * cancellation (its running calls still settle) and `run` then rejects with
 * that error: a bug must not leave calls running untracked, nor hang.
 */
export class EpochRunner<T> {
  readonly #opts: RunnerOptions<T>
  readonly #hooks: RunnerHooks | undefined
  /** By call index; a call that was never in an epoch has none. */
  readonly #settled: Array<Settlement<T> | undefined> = []
  /** Uncertain writes without a key block every later write. */
  readonly #unkeyed: Uncertain[] = []
  /** Uncertain keyed writes block later writes with the same key; made with the first one. */
  #keyed: Map<string, Uncertain[]> | null = null
  #closed = false
  #failure: { error: unknown } | undefined

  constructor (opts: RunnerOptions<T>) {
    if (!Number.isInteger(opts.maxConcurrent) || opts.maxConcurrent < 1) {
      throw new TypeError(`Expected maxConcurrent to be a positive integer, got ${String(opts.maxConcurrent)}`)
    }
    this.#opts = opts
    this.#hooks = opts.hooks
  }

  /** True once nothing new may start (cancelled, closed by a dispatch, or a hook failed). */
  get stopped (): boolean {
    return this.#closed || this.#failure !== undefined || this.#opts.signal?.aborted === true
  }

  /** Runs every epoch; resolves with one settlement per call, by call index. */
  async run (epochs: readonly Epoch[], dispatch: Dispatch<T>): Promise<ReadonlyArray<Settlement<T> | undefined>> {
    for (let e = 0; e < epochs.length; e++) {
      const calls = epochs[e]!
      if (this.stopped) {
        // Cancellation never starts a later epoch; its calls still settle (as cancelled).
        for (const call of calls) this.#settle(call, e, { kind: 'cancelled', epoch: e })
        continue
      }
      await this.#runEpoch(e, calls, dispatch)
    }
    if (this.#failure !== undefined) throw this.#failure.error
    return this.#settled
  }

  #runEpoch (epoch: number, calls: Epoch, dispatch: Dispatch<T>): Promise<void> {
    this.#epochStarted(epoch, calls.length)
    return new Promise<void>((resolve) => {
      const state: EpochState<T> = {
        epoch,
        dispatch,
        resolve,
        waiting: calls.slice(),
        first: 0,
        left: calls.length,
        running: 0,
        keys: null,
        keyWaits: null,
        filled: false,
        done: false,
        startedAt: performance.now(),
        onAbort: () => { this.#finishIfDone(state) }
      }
      this.#opts.signal?.addEventListener('abort', state.onAbort, { once: true })
      this.#fill(state)
      // A call started from here on waited: for a slot or for its key (waitOf).
      state.filled = true
    })
  }

  /** Starts waiting calls, first in source order, while slots are free and their keys are not held. */
  #fill (s: EpochState<T>): void {
    const waiting = s.waiting
    const max = this.#opts.maxConcurrent
    for (let i = s.first; i < waiting.length && s.running < max && !this.stopped; i++) {
      const call = waiting[i]
      if (call == null) {
        if (i === s.first) s.first++
        continue
      }
      const key = call.conflictKey
      // Held by a running call: this call and every later one with the key wait.
      const holder = key === null ? undefined : s.keys?.get(key)
      if (holder !== undefined) {
        (s.keyWaits ??= new Map()).set(call.index, holder)
        continue
      }
      waiting[i] = null
      s.left--
      if (i === s.first) s.first++
      const blocker = call.readOnly ? undefined : this.#blockerOf(call)
      if (blocker !== undefined) {
        this.#settle(call, s.epoch, { kind: 'blocked', epoch: s.epoch, blockedBy: blocker.id })
        continue
      }
      if (key !== null) (s.keys ??= new Map()).set(key, call.id)
      s.running++
      this.#start(s, call, s.filled ? waitOf(s, call) : undefined)
    }
    this.#finishIfDone(s)
  }

  #start (s: EpochState<T>, call: SchedulableCall, waited: Wait | undefined): void {
    this.#callStarted(call, s.epoch)
    const startedAt = Date.now()
    const t0 = performance.now()
    let promise: Promise<DispatchOutcome<T>>
    try {
      promise = Promise.resolve(s.dispatch(call, s.epoch))
    } catch (err) {
      promise = Promise.reject(err)
    }
    // One settlement per call, however the dispatch ends; then the slot and the key free up.
    promise.then(
      (outcome) => { this.#ended(s, call, outcome, undefined, startedAt, t0, waited) },
      (err: unknown) => { this.#ended(s, call, null, err, startedAt, t0, waited) })
  }

  #ended (s: EpochState<T>, call: SchedulableCall, outcome: DispatchOutcome<T> | null, err: unknown, startedAt: number, t0: number, waited: Wait | undefined): void {
    try {
      const o = outcome ?? this.#opts.onDispatchError(call, err)
      if (o.uncertain && !call.readOnly) this.#recordUncertain(call)
      if (o.closeBatch) this.#closed = true
      const durationMs = performance.now() - t0
      this.#settle(call, s.epoch, waited === undefined
        ? { kind: 'ran', epoch: s.epoch, value: o.value, startedAt, durationMs }
        : { kind: 'ran', epoch: s.epoch, value: o.value, startedAt, durationMs, waited })
    } catch (error) {
      // onDispatchError itself threw: the call cannot settle; stop and report.
      this.#failure ??= { error }
    }
    s.running--
    if (call.conflictKey !== null) s.keys?.delete(call.conflictKey)
    this.#fill(s)
  }

  #finishIfDone (s: EpochState<T>): void {
    if (s.done || s.running > 0) return
    if (s.left > 0 && !this.stopped) return
    s.done = true
    this.#opts.signal?.removeEventListener('abort', s.onAbort)
    const waiting = s.waiting
    for (let i = s.first; i < waiting.length; i++) {
      const call = waiting[i]
      if (call == null) continue
      waiting[i] = null
      this.#settle(call, s.epoch, { kind: 'cancelled', epoch: s.epoch })
    }
    s.left = 0
    this.#epochSettled(s.epoch, performance.now() - s.startedAt)
    s.resolve()
  }

  // Each hook is called guarded: one that throws stops the batch instead of losing track of it.

  #epochStarted (epoch: number, size: number): void {
    const hooks = this.#hooks
    if (hooks?.epochStarted === undefined) return
    try { hooks.epochStarted(epoch, size) } catch (err) { this.#failure ??= { error: err } }
  }

  #epochSettled (epoch: number, durationMs: number): void {
    const hooks = this.#hooks
    if (hooks?.epochSettled === undefined) return
    try { hooks.epochSettled(epoch, durationMs) } catch (err) { this.#failure ??= { error: err } }
  }

  #callStarted (call: SchedulableCall, epoch: number): void {
    const hooks = this.#hooks
    if (hooks?.callStarted === undefined) return
    try { hooks.callStarted(call, epoch) } catch (err) { this.#failure ??= { error: err } }
  }

  #settle (call: SchedulableCall, epoch: number, settlement: Settlement<T>): void {
    this.#settled[call.index] = settlement
    const hooks = this.#hooks
    if (hooks?.callSettled === undefined) return
    try { hooks.callSettled(call, epoch, settlement) } catch (err) { this.#failure ??= { error: err } }
  }

  #recordUncertain (call: SchedulableCall): void {
    const entry = { index: call.index, id: call.id }
    if (call.conflictKey === null) {
      this.#unkeyed.push(entry)
      return
    }
    const keyed = (this.#keyed ??= new Map())
    const list = keyed.get(call.conflictKey)
    if (list === undefined) keyed.set(call.conflictKey, [entry])
    else list.push(entry)
  }

  /** The earliest uncertain write, before this write in source order, that blocks it. */
  #blockerOf (call: SchedulableCall): Uncertain | undefined {
    const keyed = call.conflictKey === null ? undefined : this.#keyed?.get(call.conflictKey)
    return earliestBefore(keyed, call.index, earliestBefore(this.#unkeyed, call.index, undefined))
  }
}

/**
 * Why a call that did not start with its epoch waited: the last running call
 * that held its conflict key when it was passed over, or else a free slot.
 */
function waitOf (s: EpochState<unknown>, call: SchedulableCall): Wait {
  const holder = s.keyWaits?.get(call.index)
  return holder === undefined ? SLOT_WAIT : { for: 'conflict_key', callId: holder }
}

const SLOT_WAIT: Wait = Object.freeze({ for: 'slot' })

/** The entry of `list` with the lowest index below `index`, or `best` when it is lower still. */
function earliestBefore (list: readonly Uncertain[] | undefined, index: number, best: Uncertain | undefined): Uncertain | undefined {
  if (list === undefined) return best
  for (const u of list) {
    if (u.index < index && (best === undefined || u.index < best.index)) best = u
  }
  return best
}

/**
 * One epoch as it runs: the calls still waiting, in source order, and the
 * slots and keys taken. Plain data the runner's methods work on, so an epoch
 * costs one object and one listener rather than a closure per handler.
 */
interface EpochState<T> {
  readonly epoch: number
  readonly dispatch: Dispatch<T>
  readonly resolve: () => void
  /** Calls not yet started or settled, in source order; a call that left is null. */
  readonly waiting: Array<SchedulableCall | null>
  /** Where the first call still waiting may be. */
  first: number
  /** Calls still waiting. */
  left: number
  running: number
  /** Keys held by running calls, with the id of the call holding each; made with the first keyed call. */
  keys: Map<string, string> | null
  /** Calls passed over because a running call held their key: the holder's id, by call index; made with the first. */
  keyWaits: Map<number, string> | null
  /** The epoch's first fill is done: a call started later waited. */
  filled: boolean
  done: boolean
  readonly startedAt: number
  readonly onAbort: () => void
}
