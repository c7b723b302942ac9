import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { FastHistogram } from './histogram.js'
import type { LoopKind } from '../repeat/loops.js'
import type { Store } from '../store/types.js'
import type { BatchObserver, BatchOutcome, CallInfo, CallSettledInfo } from './types.js'

const BATCH_OUTCOMES: readonly BatchOutcome[] = ['completed', 'terminated', 'cancelled', 'closed', 'error', 'awaiting_approval']

/** Label used for calls whose tool name resolved to nothing, so model typos cannot grow the label set. */
export const UNKNOWN_TOOL_LABEL = '(unknown)'

/**
 * The service's Prometheus metrics, one Registry per app instance. Labels
 * are small fixed sets (tool, status, outcome, reason), never run or call ids.
 */
export class Metrics {
  readonly registry = new Registry()
  readonly batches: Counter<'outcome'>
  readonly batchDuration: FastHistogram
  readonly calls: Counter<'tool' | 'status'>
  readonly callDuration: FastHistogram
  readonly epochs: Counter
  readonly epochWidth: FastHistogram
  readonly repeatAdvisories: Counter<'tool'>
  readonly repeatTerminations: Counter<'tool'>
  readonly loopDetections: Counter<'kind' | 'action'>
  readonly projectionFailures: Counter<'tool'>
  readonly uncertainWrites: Counter<'tool'>
  readonly blockedCalls: Counter<'tool'>
  readonly runTerminations: Counter<'reason'>
  readonly inFlightCalls: Gauge
  readonly inFlightBatches: Gauge
  // The hottest series are counted in plain numbers and handed to prom-client
  // when it collects (on scrape): prom-client hashes the label set on every
  // update, several µs per call.
  /** Calls answered, by tool then status. */
  readonly #pendingCalls = new Map<string, Map<string, { n: number }>>()
  readonly #pendingBatches = new Map<BatchOutcome, { n: number }>()
  #pendingEpochs = 0
  #callsInFlight = 0
  #batchesInFlight = 0

  constructor (store: Store) {
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry })
    this.batches = new Counter({
      name: 'toolgate_batches_total',
      help: 'Batches answered, by outcome (completed, terminated, cancelled, closed, error, awaiting_approval).',
      labelNames: ['outcome'],
      registers,
      collect: () => {
        for (const [outcome, p] of this.#pendingBatches) {
          if (p.n > 0) this.batches.inc({ outcome }, p.n)
          p.n = 0
        }
      }
    })
    this.batchDuration = new FastHistogram({ name: 'toolgate_batch_duration_seconds', help: 'Wall time of a batch, from lease to answer.', buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers })
    this.calls = new Counter({
      name: 'toolgate_tool_calls_total',
      help: 'Tool calls answered, by tool and status.',
      labelNames: ['tool', 'status'],
      registers,
      collect: () => {
        for (const [tool, byStatus] of this.#pendingCalls) {
          for (const [status, p] of byStatus) {
            if (p.n > 0) this.calls.inc({ tool, status }, p.n)
            p.n = 0
          }
        }
      }
    })
    this.callDuration = new FastHistogram({ name: 'toolgate_tool_call_duration_seconds', help: 'Time from dispatch to settlement of calls that ran.', labelName: 'tool', buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers })
    this.epochs = new Counter({
      name: 'toolgate_epochs_total',
      help: 'Epochs started.',
      registers,
      collect: () => {
        if (this.#pendingEpochs > 0) this.epochs.inc(this.#pendingEpochs)
        this.#pendingEpochs = 0
      }
    })
    this.epochWidth = new FastHistogram({ name: 'toolgate_epoch_width_calls', help: 'Calls per epoch.', buckets: [1, 2, 4, 8, 16, 32, 64, 128], registers })
    this.repeatAdvisories = new Counter({ name: 'toolgate_repeat_advisories_total', help: 'Exact-repeat advisories (the call still ran).', labelNames: ['tool'], registers })
    this.repeatTerminations = new Counter({ name: 'toolgate_repeat_terminations_total', help: 'Runs terminated by exact-repeat protection.', labelNames: ['tool'], registers })
    this.loopDetections = new Counter({ name: 'toolgate_loop_detections_total', help: 'Loop detections by kind (exact, cycle, errors, no_progress) and action (advisory, terminated).', labelNames: ['kind', 'action'], registers })
    this.projectionFailures = new Counter({ name: 'toolgate_projection_failures_total', help: 'Action receipt projections that failed and closed their batch.', labelNames: ['tool'], registers })
    this.uncertainWrites = new Counter({ name: 'toolgate_uncertain_writes_total', help: 'Writes whose outcome is unknown.', labelNames: ['tool'], registers })
    this.blockedCalls = new Counter({ name: 'toolgate_blocked_calls_total', help: 'Writes not dispatched because of an earlier uncertain write.', labelNames: ['tool'], registers })
    this.runTerminations = new Counter({ name: 'toolgate_run_terminations_total', help: 'Runs terminated, by reason.', labelNames: ['reason'], registers })
    this.inFlightCalls = new Gauge({ name: 'toolgate_in_flight_calls', help: 'Calls dispatched and not yet settled.', registers, collect: () => { this.inFlightCalls.set(this.#callsInFlight) } })
    this.inFlightBatches = new Gauge({ name: 'toolgate_in_flight_batches', help: 'Batches running in this process.', registers, collect: () => { this.inFlightBatches.set(this.#batchesInFlight) } })
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
    new Gauge({
      name: 'toolgate_store_up',
      help: 'Whether the store of run state answers (1) or not (0), as /readyz sees it; toolgate_active_runs keeps its last value while it is 0.',
      registers,
      async collect () {
        this.set(await store.ready().then((up) => (up ? 1 : 0), () => 0))
      }
    })
    // Every outcome is exported from the start, so rates work before the first of each.
    for (const outcome of BATCH_OUTCOMES) this.batches.inc({ outcome }, 0)
  }

  /** The metrics side of one batch. */
  observer (): BatchObserver {
    this.#batchesInFlight++
    return new BatchMetrics(this)
  }

  /** A call was dispatched. */
  callStarted (): void {
    this.#callsInFlight++
  }

  /** A call settled; `ran` when it had been dispatched. */
  callSettled (tool: string, status: string, ran: boolean): void {
    if (ran) this.#callsInFlight--
    let byStatus = this.#pendingCalls.get(tool)
    if (byStatus === undefined) this.#pendingCalls.set(tool, (byStatus = new Map()))
    const p = byStatus.get(status)
    if (p === undefined) byStatus.set(status, { n: 1 })
    else p.n++
  }

  /** An epoch started. */
  epochStarted (): void {
    this.#pendingEpochs++
  }

  /** A batch answered. */
  batchCompleted (outcome: BatchOutcome): void {
    this.#batchesInFlight--
    const p = this.#pendingBatches.get(outcome)
    if (p === undefined) this.#pendingBatches.set(outcome, { n: 1 })
    else p.n++
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
    this.#m.epochStarted()
    this.#m.epochWidth.observe(size)
  }

  callStarted (): void {
    this.#m.callStarted()
  }

  callSettled (c: CallSettledInfo): void {
    const m = this.#m
    const tool = labelOf(c)
    m.callSettled(tool, c.status, c.durationMs !== null)
    if (c.durationMs !== null) m.callDuration.observe(c.durationMs / 1000, tool)
    if (c.uncertain) m.uncertainWrites.inc({ tool })
    if (c.status === 'blocked') m.blockedCalls.inc({ tool })
  }

  repeatDetected (c: CallInfo, action: 'advisory' | 'terminated', _count: number, kind: LoopKind = 'exact'): void {
    this.#m.loopDetections.inc({ kind, action })
    if (kind !== 'exact') return
    const counter = action === 'advisory' ? this.#m.repeatAdvisories : this.#m.repeatTerminations
    counter.inc({ tool: labelOf(c) })
  }

  projectionFailed (c: CallInfo): void {
    this.#m.projectionFailures.inc({ tool: labelOf(c) })
  }

  runTerminated (reason: string): void {
    this.#m.runTerminations.inc({ reason })
  }

  batchCompleted (outcome: BatchOutcome, durationMs: number): void {
    this.#m.batchCompleted(outcome)
    this.#m.batchDuration.observe(durationMs / 1000)
  }
}
