import { performance } from 'node:perf_hooks'
import type { DispatchOutcome, Epoch, RunnerHooks, SchedulableCall, Settlement, StopSignal } from './types.js'

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
 * map `run` resolves with. A hook that throws stops the batch like a
 * cancellation (its running calls still settle) and `run` then rejects with
 * that error: a bug must not leave calls running untracked, nor hang.
 */
export class EpochRunner<T> {
  readonly #opts: RunnerOptions<T>
  readonly #settled = new Map<number, Settlement<T>>()
  /** Uncertain writes without a key block every later write. */
  readonly #unkeyed: Uncertain[] = []
  /** Uncertain keyed writes block later writes with the same key. */
  readonly #keyed = new Map<string, Uncertain[]>()
  #closed = false
  #failure: { error: unknown } | undefined

  constructor (opts: RunnerOptions<T>) {
    if (!Number.isInteger(opts.maxConcurrent) || opts.maxConcurrent < 1) {
      throw new TypeError(`Expected maxConcurrent to be a positive integer, got ${String(opts.maxConcurrent)}`)
    }
    this.#opts = opts
  }

  /** True once nothing new may start (cancelled, closed by a dispatch, or a hook failed). */
  get stopped (): boolean {
    return this.#closed || this.#failure !== undefined || this.#opts.signal?.aborted === true
  }

  /** Runs every epoch; resolves with one settlement per call, keyed by call index. */
  async run (epochs: readonly Epoch[], dispatch: Dispatch<T>): Promise<Map<number, Settlement<T>>> {
    for (const [e, calls] of epochs.entries()) {
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
    const started = performance.now()
    this.#hook('epochStarted', epoch, calls.length)
    const pending = [...calls]
    const runningKeys = new Set<string>()
    const signal = this.#opts.signal
    let running = 0
    let done = false

    return new Promise<void>((resolve) => {
      const finishIfDone = (): void => {
        if (done || running > 0) return
        if (pending.length > 0 && !this.stopped) return
        done = true
        signal?.removeEventListener('abort', finishIfDone)
        for (const call of pending.splice(0)) this.#settle(call, epoch, { kind: 'cancelled', epoch })
        this.#hook('epochSettled', epoch, performance.now() - started)
        resolve()
      }

      const fill = (): void => {
        for (let i = 0; i < pending.length && running < this.#opts.maxConcurrent && !this.stopped;) {
          const call = pending[i]!
          const key = call.conflictKey
          // Held by a running call: this call and every later one with the key wait.
          if (key !== null && runningKeys.has(key)) {
            i++
            continue
          }
          pending.splice(i, 1)
          const blocker = call.readOnly ? undefined : this.#blockerOf(call)
          if (blocker !== undefined) {
            this.#settle(call, epoch, { kind: 'blocked', epoch, blockedBy: blocker.id })
            continue
          }
          if (key !== null) runningKeys.add(key)
          running++
          start(call, key)
        }
        finishIfDone()
      }

      const start = (call: SchedulableCall, key: string | null): void => {
        this.#hook('callStarted', call, epoch)
        const startedAt = Date.now()
        const t0 = performance.now()
        // One settlement per call, however the dispatch ends; then the slot and the key free up.
        const settle = (outcome: DispatchOutcome<T> | null, err: unknown): void => {
          try {
            const o = outcome ?? this.#opts.onDispatchError(call, err)
            if (o.uncertain && !call.readOnly) this.#recordUncertain(call)
            if (o.closeBatch) this.#closed = true
            this.#settle(call, epoch, { kind: 'ran', epoch, value: o.value, startedAt, durationMs: performance.now() - t0 })
          } catch (error) {
            // onDispatchError itself threw: the call cannot settle; stop and report.
            this.#failure ??= { error }
          }
          running--
          if (key !== null) runningKeys.delete(key)
          fill()
        }
        let promise: Promise<DispatchOutcome<T>>
        try {
          promise = Promise.resolve(dispatch(call, epoch))
        } catch (err) {
          promise = Promise.reject(err)
        }
        promise.then((outcome) => settle(outcome, undefined), (err: unknown) => settle(null, err))
      }

      signal?.addEventListener('abort', finishIfDone, { once: true })
      fill()
    })
  }

  #settle (call: SchedulableCall, epoch: number, settlement: Settlement<T>): void {
    this.#settled.set(call.index, settlement)
    this.#hook('callSettled', call, epoch, settlement)
  }

  /** Calls a hook by name; one that throws stops the batch instead of losing track of it. */
  #hook<K extends keyof RunnerHooks> (name: K, ...args: Parameters<NonNullable<RunnerHooks[K]>>): void {
    const hooks = this.#opts.hooks
    const hook = hooks?.[name] as ((...a: typeof args) => void) | undefined
    if (hook === undefined) return
    try {
      hook.apply(hooks, args)
    } catch (err) {
      this.#failure ??= { error: err }
    }
  }

  #recordUncertain (call: SchedulableCall): void {
    const entry = { index: call.index, id: call.id }
    if (call.conflictKey === null) {
      this.#unkeyed.push(entry)
      return
    }
    const list = this.#keyed.get(call.conflictKey)
    if (list === undefined) this.#keyed.set(call.conflictKey, [entry])
    else list.push(entry)
  }

  /** The earliest uncertain write, before this write in source order, that blocks it. */
  #blockerOf (call: SchedulableCall): Uncertain | undefined {
    let blocker: Uncertain | undefined
    const consider = (list: readonly Uncertain[] | undefined): void => {
      for (const u of list ?? []) {
        if (u.index < call.index && (blocker === undefined || u.index < blocker.index)) blocker = u
      }
    }
    consider(this.#unkeyed)
    if (call.conflictKey !== null) consider(this.#keyed.get(call.conflictKey))
    return blocker
  }
}
