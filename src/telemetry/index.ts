import type { Logger } from 'pino'
import type { Store } from '../store/types.js'
import { Metrics } from './metrics.js'
import { SummaryAggregator } from './summary.js'
import { type BatchInfo, type BatchObserver, type Telemetry, combineObservers } from './types.js'

/** Telemetry of one app instance: metrics, logs, traces and the summaries. */
export interface TelemetryHandle extends Telemetry {
  readonly metrics: Metrics
  readonly summary: SummaryAggregator
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
  return {
    metrics,
    summary,
    observeBatch (info: BatchInfo): BatchObserver {
      const observers = [metrics.observer(), batchLogger(opts.logger, info)]
      if (opts.extra !== undefined) observers.push(opts.extra.observeBatch(info))
      return combineObservers(observers)
    }
  }
}

/** One log line per batch, bound to runId and batchId; never arguments or bodies. */
function batchLogger (logger: Logger, info: BatchInfo): BatchObserver {
  const log = logger.child({ runId: info.runId, batchId: info.batchId })
  return {
    repeatDetected: (c, action, count) => log.info({ callId: c.callId, tool: c.tool, action, count }, 'exact repeat detected'),
    projectionFailed: (c, problem) => log.warn({ callId: c.callId, tool: c.tool, problem }, 'receipt projection failed'),
    runTerminated: (reason) => log.info({ reason }, 'run terminated'),
    callSettled: (c) => {
      if (c.uncertain) log.warn({ callId: c.callId, tool: c.tool }, 'write outcome uncertain')
    },
    batchCompleted: (outcome, durationMs) => log.info({ turn: info.turn, calls: info.calls, outcome, durationMs: Math.round(durationMs * 1000) / 1000 }, 'batch completed')
  }
}
