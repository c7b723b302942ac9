import type { CallStatus } from '../model/result.js'
import type { LoopKind } from '../model/loops.js'
import type { ExecutorFailure, ExecutorKind } from './executor-failure.js'

/** What every observer of a batch is told; never arguments, never bodies. */
export interface BatchInfo {
  runId: string
  batchId: string
  tenant: string
  /** The id of the request that brought the batch, when one did: its lines carry it. */
  reqId?: string | undefined
  /** The name of the caller's key, when it has one (never the key). */
  keyName?: string | undefined
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
  /** The tool's description, when the call resolved to a tool and started (for `gen_ai.tool.description`). */
  description?: string | undefined
}

export interface CallSettledInfo extends CallInfo {
  status: CallStatus
  durationMs: number | null
  /** A write whose outcome is unknown. */
  uncertain: boolean
  readOnly: boolean
  /** A short fixed code saying why a call did not succeed (`details.reason` or `details.cause`); never free text. */
  reason?: string | undefined
  /** The kind of executor a call that ran went to. */
  executor?: ExecutorKind | undefined
  /** Why its exchange with the executor failed, when it ran and did (never its body). */
  failure?: ExecutorFailure | undefined
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
  /** A loop detector fired at this call (`kind` is `exact` unless said otherwise); `count` is its streak or repetitions. */
  repeatDetected? (call: CallInfo, action: 'advisory' | 'terminated', count: number, kind?: LoopKind): void
  projectionFailed? (call: CallInfo, problem: string): void
  /** Preparing the batch's calls took longer than the configured threshold (the event loop was held meanwhile, but for an external authorizer's wait). */
  preparationSlow? (durationMs: number): void
  runTerminated? (reason: string): void
  batchCompleted? (outcome: BatchOutcome, durationMs: number): void
  /** Extra headers for the executor request of a call (e.g. `traceparent`). */
  executorHeaders? (call: CallInfo): Record<string, string> | undefined
}

/** How a batch ended, for metrics and logs. */
export type BatchOutcome = 'completed' | 'terminated' | 'cancelled' | 'closed' | 'error' | 'awaiting_approval'

/** Makes the observers of one batch. */
export interface Telemetry {
  observeBatch (info: BatchInfo): BatchObserver
  /**
   * A run terminated where no batch observes it: a batch refused because it
   * would pass a limit, or a run found past its timeoutMs when read. Counted
   * and logged as a batch's own `runTerminated` is.
   */
  runTerminated? (runId: string, reason: string, batchId?: string, reqId?: string): void
}

/**
 * Fans every hook out to several observers, in order. Its methods live on
 * the prototype: a batch pays for one small object, not a closure per hook.
 * With `onFailure`, a hook that throws is reported (with the hook's name)
 * and the others still run: telemetry must never change what a batch does.
 * Without it, the error propagates.
 */
export class ObserverList implements BatchObserver {
  readonly #list: readonly BatchObserver[]
  readonly #onFailure: ((hook: string, err: unknown) => void) | undefined

  constructor (observers: readonly BatchObserver[], onFailure?: (hook: string, err: unknown) => void) {
    this.#list = observers
    this.#onFailure = onFailure
  }

  epochStarted (e: number, n: number): void {
    for (const o of this.#list) try { o.epochStarted?.(e, n) } catch (err) { this.#failed('epochStarted', err) }
  }

  epochSettled (e: number, n: number, d: number): void {
    for (const o of this.#list) try { o.epochSettled?.(e, n, d) } catch (err) { this.#failed('epochSettled', err) }
  }

  callStarted (c: CallInfo): void {
    for (const o of this.#list) try { o.callStarted?.(c) } catch (err) { this.#failed('callStarted', err) }
  }

  callSettled (c: CallSettledInfo): void {
    for (const o of this.#list) try { o.callSettled?.(c) } catch (err) { this.#failed('callSettled', err) }
  }

  repeatDetected (c: CallInfo, a: 'advisory' | 'terminated', n: number, k: LoopKind = 'exact'): void {
    for (const o of this.#list) try { o.repeatDetected?.(c, a, n, k) } catch (err) { this.#failed('repeatDetected', err) }
  }

  projectionFailed (c: CallInfo, p: string): void {
    for (const o of this.#list) try { o.projectionFailed?.(c, p) } catch (err) { this.#failed('projectionFailed', err) }
  }

  preparationSlow (d: number): void {
    for (const o of this.#list) try { o.preparationSlow?.(d) } catch (err) { this.#failed('preparationSlow', err) }
  }

  runTerminated (r: string): void {
    for (const o of this.#list) try { o.runTerminated?.(r) } catch (err) { this.#failed('runTerminated', err) }
  }

  batchCompleted (out: BatchOutcome, d: number): void {
    for (const o of this.#list) try { o.batchCompleted?.(out, d) } catch (err) { this.#failed('batchCompleted', err) }
  }

  executorHeaders (c: CallInfo): Record<string, string> | undefined {
    let headers: Record<string, string> | undefined
    for (const o of this.#list) {
      let h: Record<string, string> | undefined
      try { h = o.executorHeaders?.(c) } catch (err) { this.#failed('executorHeaders', err) }
      if (h !== undefined) headers = headers === undefined ? h : { ...headers, ...h }
    }
    return headers
  }

  #failed (hook: string, err: unknown): void {
    if (this.#onFailure === undefined) throw err
    this.#onFailure(hook, err)
  }
}
