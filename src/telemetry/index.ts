import type { Logger } from 'pino'
import type { Store } from '../store/types.js'
import { BatchLog, batchBindings } from './batch-log.js'
import { Metrics, type ToolNames } from './metrics.js'
import { RequestMetrics } from './request-metrics.js'
import { SummaryAggregator } from './summary.js'
import { tracingObserver } from './tracing.js'
import { type BatchInfo, type BatchObserver, ObserverList, type Telemetry } from './types.js'

/** Telemetry of one app instance: metrics, logs, traces and the summaries. */
export interface TelemetryHandle extends Telemetry {
  readonly metrics: Metrics
  readonly summary: SummaryAggregator
  /** What the HTTP side counts (requests, replays, streams, tokens, runs). */
  readonly requests: RequestMetrics
  runTerminated (runId: string, reason: string, batchId?: string, reqId?: string): void
}

export interface TelemetryOptions {
  logger: Logger
  store: Store
  /** The tools known now, whose metric series are exported from 0. */
  toolNames?: ToolNames
  /** An extra observer factory (tests). */
  extra?: Telemetry | undefined
}

export function createTelemetry (opts: TelemetryOptions): TelemetryHandle {
  const metrics = new Metrics(opts.store, opts.toolNames)
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
    requests: new RequestMetrics(metrics.registry),
    observeBatch (info: BatchInfo): BatchObserver {
      const observers = [metrics.observer(), new BatchLog(logger, info), tracingObserver(info)]
      if (opts.extra !== undefined) observers.push(opts.extra.observeBatch(info))
      return new ObserverList(observers, onFailure)
    },
    runTerminated (runId: string, reason: string, batchId?: string, reqId?: string): void {
      metrics.runTerminations.inc([reason])
      logger.info({ ...batchBindings({ runId, batchId, reqId }), reason }, 'run terminated')
      opts.extra?.runTerminated?.(runId, reason, batchId, reqId)
    }
  }
}
