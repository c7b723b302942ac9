import type { CallStatus } from '../batch/types.js'

/** What every observer of a batch is told; never arguments, never bodies. */
export interface BatchInfo {
  runId: string
  batchId: string
  tenant: string
  turn: number
  calls: number
  mode: string
  /** The W3C `traceparent` of the request that brought the batch, if any: the batch's trace continues it. */
  traceparent?: string | undefined
  /** The W3C `tracestate` that came with `traceparent`. */
  tracestate?: string | undefined
}

export interface CallInfo {
  callId: string
  /** Canonical tool name, or the requested one when no tool resolved. */
  tool: string
  /** False when the name resolved to no tool: metrics then use a fixed label. */
  known: boolean
  epoch: number | null
}

export interface CallSettledInfo extends CallInfo {
  status: CallStatus
  durationMs: number | null
  /** A write whose outcome is unknown. */
  uncertain: boolean
  readOnly: boolean
  /** A short fixed code saying why a call did not succeed (`details.reason` or `details.cause`); never free text. */
  reason?: string | undefined
}

/**
 * Hooks on the life of one batch, called synchronously in the real order
 * things happen. Metrics, traces, logs and the host's events all hang here.
 */
export interface BatchObserver {
  epochStarted? (epoch: number, size: number): void
  epochSettled? (epoch: number, size: number, durationMs: number): void
  callStarted? (call: CallInfo): void
  callSettled? (call: CallSettledInfo): void
  repeatDetected? (call: CallInfo, action: 'advisory' | 'terminated', count: number): void
  projectionFailed? (call: CallInfo, problem: string): void
  runTerminated? (reason: string): void
  batchCompleted? (outcome: BatchOutcome, durationMs: number): void
  /** Extra headers for the executor request of a call (e.g. `traceparent`). */
  executorHeaders? (call: CallInfo): Record<string, string> | undefined
}

/** How a batch ended, for metrics and logs. */
export type BatchOutcome = 'completed' | 'terminated' | 'cancelled' | 'closed' | 'error'

/** Makes the observers of one batch. */
export interface Telemetry {
  observeBatch (info: BatchInfo): BatchObserver
}

/**
 * Fans every hook out to several observers, in order. Its methods live on
 * the prototype: a batch pays for one small object, not a closure per hook.
 */
export class ObserverList implements BatchObserver {
  readonly #list: readonly BatchObserver[]

  constructor (observers: readonly BatchObserver[]) {
    this.#list = observers
  }

  epochStarted (e: number, n: number): void { for (const o of this.#list) o.epochStarted?.(e, n) }
  epochSettled (e: number, n: number, d: number): void { for (const o of this.#list) o.epochSettled?.(e, n, d) }
  callStarted (c: CallInfo): void { for (const o of this.#list) o.callStarted?.(c) }
  callSettled (c: CallSettledInfo): void { for (const o of this.#list) o.callSettled?.(c) }
  repeatDetected (c: CallInfo, a: 'advisory' | 'terminated', n: number): void { for (const o of this.#list) o.repeatDetected?.(c, a, n) }
  projectionFailed (c: CallInfo, p: string): void { for (const o of this.#list) o.projectionFailed?.(c, p) }
  runTerminated (r: string): void { for (const o of this.#list) o.runTerminated?.(r) }
  batchCompleted (out: BatchOutcome, d: number): void { for (const o of this.#list) o.batchCompleted?.(out, d) }
  executorHeaders (c: CallInfo): Record<string, string> | undefined {
    let headers: Record<string, string> | undefined
    for (const o of this.#list) {
      const h = o.executorHeaders?.(c)
      if (h !== undefined) headers = headers === undefined ? h : { ...headers, ...h }
    }
    return headers
  }
}

/**
 * Telemetry must never change what a batch does: like ObserverList, but a
 * hook that throws is reported to `onFailure` (with the hook's name) and
 * otherwise ignored.
 */
export class GuardedObservers implements BatchObserver {
  readonly #list: readonly BatchObserver[]
  readonly #onFailure: (hook: string, err: unknown) => void

  constructor (observers: readonly BatchObserver[], onFailure: (hook: string, err: unknown) => void) {
    this.#list = observers
    this.#onFailure = onFailure
  }

  epochStarted (e: number, n: number): void {
    for (const o of this.#list) try { o.epochStarted?.(e, n) } catch (err) { this.#onFailure('epochStarted', err) }
  }

  epochSettled (e: number, n: number, d: number): void {
    for (const o of this.#list) try { o.epochSettled?.(e, n, d) } catch (err) { this.#onFailure('epochSettled', err) }
  }

  callStarted (c: CallInfo): void {
    for (const o of this.#list) try { o.callStarted?.(c) } catch (err) { this.#onFailure('callStarted', err) }
  }

  callSettled (c: CallSettledInfo): void {
    for (const o of this.#list) try { o.callSettled?.(c) } catch (err) { this.#onFailure('callSettled', err) }
  }

  repeatDetected (c: CallInfo, a: 'advisory' | 'terminated', n: number): void {
    for (const o of this.#list) try { o.repeatDetected?.(c, a, n) } catch (err) { this.#onFailure('repeatDetected', err) }
  }

  projectionFailed (c: CallInfo, p: string): void {
    for (const o of this.#list) try { o.projectionFailed?.(c, p) } catch (err) { this.#onFailure('projectionFailed', err) }
  }

  runTerminated (r: string): void {
    for (const o of this.#list) try { o.runTerminated?.(r) } catch (err) { this.#onFailure('runTerminated', err) }
  }

  batchCompleted (out: BatchOutcome, d: number): void {
    for (const o of this.#list) try { o.batchCompleted?.(out, d) } catch (err) { this.#onFailure('batchCompleted', err) }
  }

  executorHeaders (c: CallInfo): Record<string, string> | undefined {
    let headers: Record<string, string> | undefined
    for (const o of this.#list) {
      let h: Record<string, string> | undefined
      try { h = o.executorHeaders?.(c) } catch (err) { this.#onFailure('executorHeaders', err) }
      if (h !== undefined) headers = headers === undefined ? h : { ...headers, ...h }
    }
    return headers
  }
}
