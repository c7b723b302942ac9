import { Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { terminationReasons } from '../../schemas/run-states.js'
import type { CallStatus } from '../model/result.js'
import type { LoopKind } from '../model/loops.js'
import { LOOP_KIND_LIST } from '../repeat/kinds/index.js'
import { type LoopKinds, loopKindNames } from '../repeat/loops.js'
import type { Store } from '../store/types.js'
import { buildInfo } from './build-info.js'
import { FastCounter } from './counter.js'
import { EXECUTOR_FAILURE_CAUSES, EXECUTOR_KINDS } from './executor-failure.js'
import { FastHistogram } from './histogram.js'
import type { BatchObserver, BatchOutcome, CallInfo, CallSettledInfo } from './types.js'

const BATCH_OUTCOMES: readonly BatchOutcome[] = ['completed', 'terminated', 'cancelled', 'closed', 'error', 'awaiting_approval']
const CALL_STATUSES: readonly CallStatus[] = ['ok', 'error', 'rejected', 'uncertain', 'blocked', 'cancelled', 'terminated', 'projection_failed', 'denied']
const LOOP_ACTIONS = ['advisory', 'terminated'] as const
/** What `runTerminated` is told: cancelling and ending a run are not terminations. */
const terminations = (kinds: LoopKinds): string[] => terminationReasons(kinds).filter((r) => r !== 'cancelled' && r !== 'ended')

/**
 * prom-client's default gauges named `*_total`, which Prometheus reserves
 * for counters (`promtool check metrics` flags them). Their counts are in
 * `nodejs_active_handles`, `nodejs_active_requests` and
 * `nodejs_active_resources` (by type) already.
 */
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']

/** Label used for calls whose tool name resolved to nothing, so model typos cannot grow the label set. */
export const UNKNOWN_TOOL_LABEL = '(unknown)'

/** The names of the tools the process knows now (the registry, imported MCP tools included). */
export type ToolNames = () => Iterable<string>

/**
 * The service's Prometheus metrics, one Registry per app instance. Labels
 * are small fixed sets (tool, status, outcome, reason), never run or call ids.
 *
 * Every label set that can be known is exported at 0 before its first event
 * (tools of the registry, statuses, reasons, kinds): a series that appears
 * with its first count gives `increase()` nothing to compare it with, so an
 * alert on the first uncertain write after a deploy would never fire. The
 * tool series follow the registry at each scrape: a tool added or imported
 * shows at 0, and the zero series of a tool removed go (counted ones stay).
 *
 * The batch path's counters and histograms count in plain numbers, read by
 * the registry at scrape time (FastCounter, FastHistogram).
 */
export class Metrics {
  readonly registry = new Registry()
  readonly batches: FastCounter<'outcome'>
  readonly batchDuration: FastHistogram
  readonly calls: FastCounter<'tool' | 'status'>
  readonly callDuration: FastHistogram
  readonly epochs: FastCounter
  readonly epochWidth: FastHistogram
  readonly repeatAdvisories: FastCounter<'tool'>
  readonly loopDetections: FastCounter<'kind' | 'action'>
  readonly projectionFailures: FastCounter<'tool'>
  readonly uncertainWrites: FastCounter<'tool'>
  readonly blockedCalls: FastCounter<'tool'>
  readonly runTerminations: FastCounter<'reason'>
  readonly executorFailures: FastCounter<'executor' | 'cause'>
  #callsInFlight = 0
  #batchesInFlight = 0

  /** `loopKinds`: the loop kinds whose labels are there from the start (the registered ones, or a test's). */
  constructor (store: Pick<Store, 'countRuns' | 'ready'>, toolNames: ToolNames = () => [], loopKinds: LoopKinds = LOOP_KIND_LIST) {
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry })
    for (const name of MISNAMED_DEFAULTS) this.registry.removeSingleMetric(name)
    const perTool = (name: string, help: string): FastCounter<'tool'> => {
      const counter: FastCounter<'tool'> = new FastCounter({ name, help, labelNames: ['tool'], registers, collect: () => { followTools(counter, toolNames, (tool) => [[tool]]) } })
      return counter
    }
    this.batches = new FastCounter({ name: 'toolgate_batches_total', help: 'Batches answered, by outcome (completed, terminated, cancelled, closed, error, awaiting_approval).', labelNames: ['outcome'], registers })
    this.batchDuration = new FastHistogram({ name: 'toolgate_batch_duration_seconds', help: 'Wall time of a batch, from lease to answer.', buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers })
    const calls: FastCounter<'tool' | 'status'> = this.calls = new FastCounter({
      name: 'toolgate_tool_calls_total',
      help: 'Tool calls answered, by tool and status.',
      labelNames: ['tool', 'status'],
      registers,
      collect: () => { followTools(calls, toolNames, (tool) => CALL_STATUSES.map((status) => [tool, status])) }
    })
    this.callDuration = new FastHistogram({ name: 'toolgate_tool_call_duration_seconds', help: 'Time from dispatch to settlement of calls that ran.', labelName: 'tool', buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers })
    this.epochs = new FastCounter({ name: 'toolgate_epochs_total', help: 'Epochs started.', registers })
    this.epochWidth = new FastHistogram({ name: 'toolgate_epoch_width_calls', help: 'Calls per epoch.', buckets: [1, 2, 4, 8, 16, 32, 64, 128], registers })
    this.repeatAdvisories = perTool('toolgate_repeat_advisories_total', 'Exact-repeat advisories (the call still ran).')
    this.loopDetections = new FastCounter({ name: 'toolgate_loop_detections_total', help: `Loop detections by kind (${loopKindNames(loopKinds).join(', ')}) and action (advisory, terminated).`, labelNames: ['kind', 'action'], registers })
    this.projectionFailures = perTool('toolgate_projection_failures_total', 'Action receipt projections that failed and closed their batch.')
    this.uncertainWrites = perTool('toolgate_uncertain_writes_total', 'Writes whose outcome is unknown.')
    this.blockedCalls = perTool('toolgate_blocked_calls_total', 'Writes not dispatched because of an earlier uncertain write.')
    this.runTerminations = new FastCounter({ name: 'toolgate_run_terminations_total', help: 'Runs terminated, by reason.', labelNames: ['reason'], registers })
    this.executorFailures = new FastCounter({ name: 'toolgate_executor_failures_total', help: 'Exchanges with an executor that did not end in a success, by executor kind (http, mcp) and cause.', labelNames: ['executor', 'cause'], registers })
    const inFlightCalls: Gauge = new Gauge({ name: 'toolgate_in_flight_calls', help: 'Calls dispatched and not yet settled.', registers, collect: () => { inFlightCalls.set(this.#callsInFlight) } })
    const inFlightBatches: Gauge = new Gauge({ name: 'toolgate_in_flight_batches', help: 'Batches running in this process.', registers, collect: () => { inFlightBatches.set(this.#batchesInFlight) } })
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
    const build = buildInfo()
    new Gauge({ name: 'toolgate_build_info', help: 'Always 1: the version of toolgate and of Node.js this process runs.', labelNames: ['version', 'node_version'], registers })
      .set({ version: build.version, node_version: build.nodeVersion }, 1)

    for (const outcome of BATCH_OUTCOMES) this.batches.zero([outcome])
    for (const kind of loopKindNames(loopKinds)) for (const action of LOOP_ACTIONS) this.loopDetections.zero([kind, action])
    for (const reason of terminations(loopKinds)) this.runTerminations.zero([reason])
    for (const executor of EXECUTOR_KINDS) for (const cause of EXECUTOR_FAILURE_CAUSES) this.executorFailures.zero([executor, cause])
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
    this.calls.inc([tool, status])
  }

  /** A batch answered. */
  batchCompleted (outcome: BatchOutcome): void {
    this.#batchesInFlight--
    this.batches.inc([outcome])
  }
}

/**
 * Brings a per-tool counter in step with the tools known now: the series of
 * each (`series` gives their label values) exist, at 0 for a new tool; the
 * zero series of tools no longer known go. `(unknown)` always stays.
 */
function followTools<L extends string> (counter: FastCounter<L>, toolNames: ToolNames, series: (tool: string) => string[][]): void {
  const known = new Set(toolNames())
  known.add(UNKNOWN_TOOL_LABEL)
  for (const tool of known) for (const values of series(tool)) counter.zero(values)
  counter.dropZeros((labels) => !known.has((labels as Record<string, string>).tool!))
}

/** Label used for a call: the tool's name, or a fixed label when the name resolved to nothing. */
const labelOf = (c: { tool: string, known: boolean }): string => (c.known ? c.tool : UNKNOWN_TOOL_LABEL)

/** The metrics side of one batch. */
class BatchMetrics implements BatchObserver {
  readonly #metrics: Metrics

  constructor (metrics: Metrics) {
    this.#metrics = metrics
  }

  epochStarted (_epoch: number, size: number): void {
    this.#metrics.epochs.inc()
    this.#metrics.epochWidth.observe(size)
  }

  callStarted (): void {
    this.#metrics.callStarted()
  }

  callSettled (c: CallSettledInfo): void {
    const m = this.#metrics
    const tool = labelOf(c)
    m.callSettled(tool, c.status, c.durationMs !== null)
    if (c.durationMs !== null) m.callDuration.observe(c.durationMs / 1000, tool)
    if (c.uncertain) m.uncertainWrites.inc([tool])
    if (c.status === 'blocked') m.blockedCalls.inc([tool])
    if (c.failure !== undefined) m.executorFailures.inc([c.executor ?? 'http', c.failure.cause])
  }

  repeatDetected (c: CallInfo, action: 'advisory' | 'terminated', _count: number, kind: LoopKind = 'exact'): void {
    this.#metrics.loopDetections.inc([kind, action])
    // A termination is counted once, by its reason (toolgate_run_terminations_total).
    if (kind === 'exact' && action === 'advisory') this.#metrics.repeatAdvisories.inc([labelOf(c)])
  }

  projectionFailed (c: CallInfo): void {
    this.#metrics.projectionFailures.inc([labelOf(c)])
  }

  runTerminated (reason: string): void {
    this.#metrics.runTerminations.inc([reason])
  }

  batchCompleted (outcome: BatchOutcome, durationMs: number): void {
    this.#metrics.batchCompleted(outcome)
    this.#metrics.batchDuration.observe(durationMs / 1000)
  }
}
