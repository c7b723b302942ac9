import { type Clock, systemClock } from '../clock.js'
import type { ExecutionHint } from '../model/tool.js'

/** What the planner and the runner need to know of a prepared call. */
export interface SchedulableCall {
  /** Position in the batch (source order); unique. */
  readonly index: number
  readonly id: string
  readonly readOnly: boolean
  readonly execution: ExecutionHint
  readonly conflictKey: string | null
}

/** The calls of one epoch, in source order. */
export type Epoch = readonly SchedulableCall[]

/** What a dispatch tells the runner once its call has settled. */
export interface DispatchOutcome<T> {
  readonly value: T
  /** The call was a write whose outcome is unknown: later writes get blocked. */
  readonly uncertain: boolean
  /** Close the batch: nothing not yet started may start (projection_failed). */
  readonly closeBatch: boolean
}

/**
 * Why a call of an epoch did not start with the epoch: every slot
 * (maxConcurrentTools) was taken, or a running call held its conflict key.
 */
export type Wait = { readonly for: 'slot' } | { readonly for: 'conflict_key', readonly callId: string }

/** How one call of a batch ended, as the runner saw it. */
export type Settlement<T> =
  | { readonly kind: 'ran', readonly epoch: number, readonly value: T, readonly startedAt: number, readonly durationMs: number, readonly waited?: Wait }
  | { readonly kind: 'blocked', readonly epoch: number, readonly blockedBy: string }
  | { readonly kind: 'cancelled', readonly epoch: number }

/** Lifecycle hooks, called synchronously in the real order things happen. */
export interface RunnerHooks {
  epochStarted? (epoch: number, size: number): void
  callStarted? (call: SchedulableCall, epoch: number): void
  callSettled? (call: SchedulableCall, epoch: number, settlement: Settlement<unknown>): void
  epochSettled? (epoch: number, durationMs: number): void
}

/**
 * What the runner reads of a stop signal: an AbortSignal fits, and so does a
 * StopSwitch.
 */
export interface StopSignal {
  readonly aborted: boolean
  readonly reason: unknown
  addEventListener (type: 'abort', listener: () => void, options?: { once?: boolean }): void
  removeEventListener (type: 'abort', listener: () => void): void
}

/**
 * A batch's stop switch. It has the part of AbortController a batch uses,
 * without EventTarget's cost, which an AbortController with one listener
 * pays per batch (docs/performance.md), and every batch has one.
 */
export class StopSwitch implements StopSignal {
  #aborted = false
  #reason: unknown = undefined
  #listeners: Array<() => void> = []
  #validUntil = Infinity
  readonly #clock: Pick<Clock, 'now'>

  /** `clock` reads the times `holdUntil` is given (the services' clock). */
  constructor (clock: Pick<Clock, 'now'> = systemClock) {
    this.#clock = clock
  }

  /** Also true once the time given to `holdUntil` has passed: asked before every call starts, so nothing starts after it. */
  get aborted (): boolean {
    if (!this.#aborted && this.#validUntil !== Infinity && this.#clock.now() >= this.#validUntil) this.abort('lease_lost')
    return this.#aborted
  }

  get reason (): unknown { return this.#reason }

  /**
   * Stops (reason `lease_lost`) once `at` (epoch ms) has passed. Checked when
   * asked rather than by a timer: a process that was paused handles the
   * answers that waited for it before any timer, and must not start another
   * call on a lease it may no longer hold.
   */
  holdUntil (at: number): void {
    this.#validUntil = at
  }

  /** Stops; the first reason sticks, listeners are told once. */
  abort (reason: unknown): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#reason = reason
    const listeners = this.#listeners
    this.#listeners = []
    for (const listener of listeners) listener()
  }

  addEventListener (_type: 'abort', listener: () => void): void {
    if (!this.#aborted) this.#listeners.push(listener)
  }

  removeEventListener (_type: 'abort', listener: () => void): void {
    const i = this.#listeners.indexOf(listener)
    if (i >= 0) this.#listeners.splice(i, 1)
  }
}
