import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { Store } from '../store/types.js'
import type { BatchObserver, BatchOutcome, CallInfo, CallSettledInfo } from './types.js'

const BATCH_OUTCOMES: readonly BatchOutcome[] = ['completed', 'terminated', 'cancelled', 'closed', 'error']

/** Label used for calls whose tool name resolved to nothing, so model typos cannot grow the label set. */
export const UNKNOWN_TOOL_LABEL = '(unknown)'

/**
 * The service's Prometheus metrics, one Registry per app instance. Labels
 * are small fixed sets (tool, status, outcome, reason), never run or call ids.
 */
export class Metrics {
  readonly registry = new Registry()
  readonly batches: Counter<'outcome'>
  readonly batchDuration: Histogram
  readonly calls: Counter<'tool' | 'status'>
  readonly callDuration: Histogram<'tool'>
  readonly epochs: Counter
  readonly epochWidth: Histogram
  readonly repeatAdvisories: Counter<'tool'>
  readonly repeatTerminations: Counter<'tool'>
  readonly projectionFailures: Counter<'tool'>
  readonly uncertainWrites: Counter<'tool'>
  readonly blockedCalls: Counter<'tool'>
  readonly runTerminations: Counter<'reason'>
  readonly inFlightCalls: Gauge
  readonly inFlightBatches: Gauge
  readonly #children = new Map<object, Map<string, Counter.Internal>>()
  readonly #durations = new Map<string, Histogram.Internal<'tool'>>()

  constructor (store: Store) {
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry })
    this.batches = new Counter({ name: 'toolgate_batches_total', help: 'Batches answered, by outcome (completed, terminated, cancelled, closed, error).', labelNames: ['outcome'], registers })
    this.batchDuration = new Histogram({ name: 'toolgate_batch_duration_seconds', help: 'Wall time of a batch, from lease to answer.', buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers })
    this.calls = new Counter({ name: 'toolgate_tool_calls_total', help: 'Tool calls answered, by tool and status.', labelNames: ['tool', 'status'], registers })
    this.callDuration = new Histogram({ name: 'toolgate_tool_call_duration_seconds', help: 'Time from dispatch to settlement of calls that ran.', labelNames: ['tool'], buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers })
    this.epochs = new Counter({ name: 'toolgate_epochs_total', help: 'Epochs started.', registers })
    this.epochWidth = new Histogram({ name: 'toolgate_epoch_width_calls', help: 'Calls per epoch.', buckets: [1, 2, 4, 8, 16, 32, 64, 128], registers })
    this.repeatAdvisories = new Counter({ name: 'toolgate_repeat_advisories_total', help: 'Exact-repeat advisories (the call still ran).', labelNames: ['tool'], registers })
    this.repeatTerminations = new Counter({ name: 'toolgate_repeat_terminations_total', help: 'Runs terminated by exact-repeat protection.', labelNames: ['tool'], registers })
    this.projectionFailures = new Counter({ name: 'toolgate_projection_failures_total', help: 'Action receipt projections that failed and closed their batch.', labelNames: ['tool'], registers })
    this.uncertainWrites = new Counter({ name: 'toolgate_uncertain_writes_total', help: 'Writes whose outcome is unknown.', labelNames: ['tool'], registers })
    this.blockedCalls = new Counter({ name: 'toolgate_blocked_calls_total', help: 'Writes not dispatched because of an earlier uncertain write.', labelNames: ['tool'], registers })
    this.runTerminations = new Counter({ name: 'toolgate_run_terminations_total', help: 'Runs terminated, by reason.', labelNames: ['reason'], registers })
    this.inFlightCalls = new Gauge({ name: 'toolgate_in_flight_calls', help: 'Calls dispatched and not yet settled.', registers })
    this.inFlightBatches = new Gauge({ name: 'toolgate_in_flight_batches', help: 'Batches running in this process.', registers })
    new Gauge({
      name: 'toolgate_active_runs',
      help: 'Runs in the active state held by the store.',
      registers,
      async collect () {
        // A store that cannot answer keeps the last value rather than failing the scrape.
        try {
          this.set((await store.countRuns()).active)
        } catch { /* the store's own health shows on /readyz */ }
      }
    })
    // Every outcome is exported from the start, so rates work before the first of each.
    for (const outcome of BATCH_OUTCOMES) this.batches.inc({ outcome }, 0)
  }

  /** The metrics side of one batch. */
  observer (): BatchObserver {
    this.inFlightBatches.inc()
    return new BatchMetrics(this)
  }

  /** The labelled child of a counter, looked up once per label set (prom-client hashes labels on every call). */
  child (counter: Counter<'tool'>, tool: string): Counter.Internal
  child (counter: Counter<'tool' | 'status'>, tool: string, status: string): Counter.Internal
  child (counter: Counter<'tool'> | Counter<'tool' | 'status'>, tool: string, status?: string): Counter.Internal {
    let byCounter = this.#children.get(counter)
    if (byCounter === undefined) this.#children.set(counter, (byCounter = new Map()))
    const key = status === undefined ? tool : `${tool}\u0000${status}`
    let child = byCounter.get(key)
    if (child === undefined) {
      child = status === undefined ? (counter as Counter<'tool'>).labels({ tool }) : (counter as Counter<'tool' | 'status'>).labels({ tool, status })
      byCounter.set(key, child)
    }
    return child
  }

  /** The call-duration histogram of one tool, looked up once per tool. */
  durationOf (tool: string): Histogram.Internal<'tool'> {
    let child = this.#durations.get(tool)
    if (child === undefined) this.#durations.set(tool, (child = this.callDuration.labels({ tool })))
    return child
  }
}

/** Label used for a call: the tool's name, or a fixed label when the name resolved to nothing. */
const labelOf = (c: { tool: string, known: boolean }): string => (c.known ? c.tool : UNKNOWN_TOOL_LABEL)

/** The metrics side of one batch. */
class BatchMetrics implements BatchObserver {
  readonly #m: Metrics

  constructor (metrics: Metrics) {
    this.#m = metrics
  }

  epochStarted (_epoch: number, size: number): void {
    this.#m.epochs.inc()
    this.#m.epochWidth.observe(size)
  }

  callStarted (): void {
    this.#m.inFlightCalls.inc()
  }

  callSettled (c: CallSettledInfo): void {
    const m = this.#m
    const tool = labelOf(c)
    m.child(m.calls, tool, c.status).inc()
    if (c.durationMs !== null) {
      m.inFlightCalls.dec()
      m.durationOf(tool).observe(c.durationMs / 1000)
    }
    if (c.uncertain) m.child(m.uncertainWrites, tool).inc()
    if (c.status === 'blocked') m.child(m.blockedCalls, tool).inc()
  }

  repeatDetected (c: CallInfo, action: 'advisory' | 'terminated'): void {
    const m = this.#m
    m.child(action === 'advisory' ? m.repeatAdvisories : m.repeatTerminations, labelOf(c)).inc()
  }

  projectionFailed (c: CallInfo): void {
    this.#m.child(this.#m.projectionFailures, labelOf(c)).inc()
  }

  runTerminated (reason: string): void {
    this.#m.runTerminations.inc({ reason })
  }

  batchCompleted (outcome: BatchOutcome, durationMs: number): void {
    const m = this.#m
    m.inFlightBatches.dec()
    m.batches.inc({ outcome })
    m.batchDuration.observe(durationMs / 1000)
  }
}
