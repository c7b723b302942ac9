import type { Logger } from 'pino'
import type { LoopKind } from '../repeat/loops.js'
import type { Store } from '../store/types.js'
import { Metrics } from './metrics.js'
import { SummaryAggregator } from './summary.js'
import { tracingObserver } from './tracing.js'
import { type BatchInfo, type BatchObserver, type CallInfo, type CallSettledInfo, ObserverList, type Telemetry } from './types.js'

/** Telemetry of one app instance: metrics, logs, traces and the summaries. */
export interface TelemetryHandle extends Telemetry {
  readonly metrics: Metrics
  readonly summary: SummaryAggregator
  runTerminated (runId: string, reason: string, batchId?: string): void
}

export interface TelemetryOptions {
  logger: Logger
  store: Store
  /** An extra observer factory (tests). */
  extra?: Telemetry | undefined
}

export function createTelemetry (opts: TelemetryOptions): TelemetryHandle {
  const metrics = new Metrics(opts.store)
  const summary = new SummaryAggregator()
  const { logger } = opts
  // A hook that throws is logged once per hook and process, then ignored.
  const failed = new Set<string>()
  const onFailure = (hook: string, err: unknown): void => {
    if (failed.has(hook)) return
    failed.add(hook)
    logger.error({ hook, err: { message: (err as Error)?.message, stack: (err as Error)?.stack } }, 'a telemetry hook failed')
  }
  return {
    metrics,
    summary,
    observeBatch (info: BatchInfo): BatchObserver {
      const observers = [metrics.observer(), new BatchLog(logger, info), tracingObserver(info)]
      if (opts.extra !== undefined) observers.push(opts.extra.observeBatch(info))
      return new ObserverList(observers, onFailure)
    },
    runTerminated (runId: string, reason: string, batchId?: string): void {
      metrics.runTerminations.inc({ reason })
      logger.info(batchId === undefined ? { runId, reason } : { runId, batchId, reason }, 'run terminated')
      opts.extra?.runTerminated?.(runId, reason, batchId)
    }
  }
}

/**
 * A batch's log lines for what is worth a line of its own (repeats,
 * projection failures, terminations, uncertain writes), each with its runId
 * and batchId; never arguments or bodies. The batch's own line is its
 * request's line (src/http/access-log.ts), written once the answer is sent.
 */
class BatchLog implements BatchObserver {
  readonly #log: Logger
  readonly #info: BatchInfo

  constructor (log: Logger, info: BatchInfo) {
    this.#log = log
    this.#info = info
  }

  repeatDetected (c: CallInfo, action: 'advisory' | 'terminated', count: number, kind: LoopKind = 'exact'): void {
    this.#log.info({ runId: this.#info.runId, batchId: this.#info.batchId, callId: c.callId, tool: c.tool, kind, action, count }, kind === 'exact' ? 'exact repeat detected' : 'loop detected')
  }

  projectionFailed (c: CallInfo, problem: string): void {
    this.#log.warn({ runId: this.#info.runId, batchId: this.#info.batchId, callId: c.callId, tool: c.tool, problem }, 'receipt projection failed')
  }

  preparationSlow (durationMs: number): void {
    this.#log.warn({ runId: this.#info.runId, batchId: this.#info.batchId, calls: this.#info.calls, durationMs: Math.round(durationMs * 10) / 10 }, 'slow batch preparation')
  }

  runTerminated (reason: string): void {
    this.#log.info({ runId: this.#info.runId, batchId: this.#info.batchId, reason }, 'run terminated')
  }

  callSettled (c: CallSettledInfo): void {
    if (c.uncertain) this.#log.warn({ runId: this.#info.runId, batchId: this.#info.batchId, callId: c.callId, tool: c.tool }, 'write outcome uncertain')
  }
}
