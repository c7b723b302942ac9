import type { Registry } from 'prom-client'
import type { LineFields } from '../logger.js'
import { FastCounter } from './counter.js'
import { FastHistogram } from './histogram.js'

/** The route label of a request that matched no route: its raw URL is never a label. */
export const UNMATCHED_ROUTE = '(unmatched)'

/** The token kinds a batch's `usage` reports. */
const TOKEN_KINDS = ['input', 'output'] as const

/**
 * What the HTTP side counts: every request by route pattern, method and
 * status, and its duration by route; batch resubmissions answered from the
 * store (idempotent replays); streamed batches whose client went away;
 * the tokens batches report; runs created and ended. Counted as each
 * request's line is written, from what that line says.
 */
export class RequestMetrics {
  readonly #requests: FastCounter<'route' | 'method' | 'status'>
  readonly #duration: FastHistogram
  readonly #replays: FastCounter
  readonly #clientsGone: FastCounter
  readonly #tokens: FastCounter<'kind'>
  readonly #runsCreated: FastCounter
  readonly #runsEnded: FastCounter

  constructor (registry: Registry) {
    const registers = [registry]
    this.#requests = new FastCounter({ name: 'toolgate_http_requests_total', help: 'HTTP requests answered, by route pattern, method and status.', labelNames: ['route', 'method', 'status'], registers })
    this.#duration = new FastHistogram({
      name: 'toolgate_http_request_duration_seconds',
      help: 'Time from a request received to its answer sent, by route pattern.',
      labelName: 'route',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers
    })
    this.#replays = new FastCounter({ name: 'toolgate_batch_replays_total', help: 'Batch resubmissions answered from the store (idempotent replays): nothing ran again.', registers })
    this.#clientsGone = new FastCounter({ name: 'toolgate_sse_clients_gone_total', help: 'Streamed batches (server-sent events) whose client went away before the end.', registers })
    this.#tokens = new FastCounter({ name: 'toolgate_tokens_total', help: 'Tokens the batches report in `usage`, by kind (input, output); resubmissions are not counted again.', labelNames: ['kind'], registers })
    this.#runsCreated = new FastCounter({ name: 'toolgate_runs_created_total', help: 'Runs created.', registers })
    this.#runsEnded = new FastCounter({ name: 'toolgate_runs_ended_total', help: 'Runs ended (DELETE /v1/runs/{runId} answered).', registers })
    for (const kind of TOKEN_KINDS) this.#tokens.zero([kind])
  }

  /** A request was answered; `batch` is what its line says of the batch it ran. */
  answered (method: string, route: string | undefined, status: number, durationMs: number, batch: LineFields | null): void {
    const label = route ?? UNMATCHED_ROUTE
    this.#requests.inc([label, method, String(status)])
    this.#duration.observe(durationMs / 1000, label)
    if (batch === null) return
    if (batch.replayed === true) this.#replays.inc()
    if (batch.clientGone === true) this.#clientsGone.inc()
    if (typeof batch.inputTokens === 'number') this.#tokens.inc(['input'], batch.inputTokens)
    if (typeof batch.outputTokens === 'number') this.#tokens.inc(['output'], batch.outputTokens)
  }

  runCreated (): void {
    this.#runsCreated.inc()
  }

  runEnded (): void {
    this.#runsEnded.inc()
  }
}
