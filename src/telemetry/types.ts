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

/** Every hook of BatchObserver, by name. */
export const OBSERVER_HOOKS = [
  'epochStarted', 'epochSettled', 'callStarted', 'callSettled', 'repeatDetected',
  'projectionFailed', 'runTerminated', 'batchCompleted', 'executorHeaders'
] as const satisfies ReadonlyArray<keyof BatchObserver>

/** How a batch ended, for metrics and logs. */
export type BatchOutcome = 'completed' | 'terminated' | 'cancelled' | 'closed' | 'error'

/** Makes the observers of one batch. */
export interface Telemetry {
  observeBatch (info: BatchInfo): BatchObserver
}

/** Fans every hook out to several observers. */
export function combineObservers (observers: readonly BatchObserver[]): BatchObserver {
  const list = observers.filter(Boolean)
  return {
    epochStarted: (e, n) => { for (const o of list) o.epochStarted?.(e, n) },
    epochSettled: (e, n, d) => { for (const o of list) o.epochSettled?.(e, n, d) },
    callStarted: (c) => { for (const o of list) o.callStarted?.(c) },
    callSettled: (c) => { for (const o of list) o.callSettled?.(c) },
    repeatDetected: (c, a, n) => { for (const o of list) o.repeatDetected?.(c, a, n) },
    projectionFailed: (c, p) => { for (const o of list) o.projectionFailed?.(c, p) },
    runTerminated: (r) => { for (const o of list) o.runTerminated?.(r) },
    batchCompleted: (out, d) => { for (const o of list) o.batchCompleted?.(out, d) },
    executorHeaders: (c) => {
      let headers: Record<string, string> | undefined
      for (const o of list) {
        const h = o.executorHeaders?.(c)
        if (h !== undefined) headers = { ...headers, ...h }
      }
      return headers
    }
  }
}
