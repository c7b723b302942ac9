import type { Logger } from 'pino'
import type { Store } from '../store/types.js'
import { Metrics } from './metrics.js'
import { SummaryAggregator } from './summary.js'
import { tracingObserver } from './tracing.js'
import { type BatchInfo, type BatchObserver, OBSERVER_HOOKS, type Telemetry, combineObservers } from './types.js'

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
  const failed = new Set<string>()
  return {
    metrics,
    summary,
    observeBatch (info: BatchInfo): BatchObserver {
      const observers = [metrics.observer(), batchLogger(opts.logger, info), tracingObserver(info)]
      if (opts.extra !== undefined) observers.push(opts.extra.observeBatch(info))
      return combineObservers(observers.map((o) => guarded(o, opts.logger, failed)))
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

/**
 * Telemetry must never change what a batch does: a hook that throws is
 * logged (once per hook and process) and otherwise ignored.
 */
function guarded (observer: BatchObserver, logger: Logger, failed: Set<string>): BatchObserver {
  const out: Record<string, unknown> = {}
  for (const name of OBSERVER_HOOKS) {
    const hook = observer[name] as ((...args: unknown[]) => unknown) | undefined
    if (typeof hook !== 'function') continue
    out[name] = (...args: unknown[]): unknown => {
      try {
        return hook.apply(observer, args)
      } catch (err) {
        if (!failed.has(name)) {
          failed.add(name)
          logger.error({ hook: name, err: { message: (err as Error)?.message, stack: (err as Error)?.stack } }, 'a telemetry hook failed')
        }
        return undefined
      }
    }
  }
  return out as BatchObserver
}
