/**
 * Recovering an uncertain write (SPEC section 14): the status URL's
 * question and its answer (`StatusClient`, `interpretStatus`), and asking
 * it in the background with backoff for the recovery window, one replica
 * at a time per operation (`Recovery`). A definitive answer is handed to
 * the resolver (service.ts).
 */
import type { Logger } from 'pino'
import { Agent } from 'undici'
import { type Clock, systemClock } from '../clock.js'
import { isObject } from '../model/json.js'
import type { Store } from '../store/types.js'
import type { Uncertainty } from '../model/uncertainty.js'
import type { Outcome, Resolved } from './types.js'

/** What recovery asks of the resolver (`UncertainResolver`, service.ts). */
export interface Resolving {
  /** The run's entry for the operation while it is unresolved. */
  find: (runId: string, operationId: string) => Promise<Uncertainty | undefined>
  /** Undefined when the operation is not (any more) an unresolved uncertainty of the run. */
  resolve: (runId: string, operationId: string, outcome: Outcome, how: 'status_url') => Promise<Resolved | undefined>
}

/** One operation to recover. */
export interface RecoveryTarget {
  runId: string
  operationId: string
  statusUrl: string
  /** How long one question may take (the tool's timeout, capped). */
  timeoutMs: number
}

/** What one attempt came to. `busy`: another replica holds the operation's lock. `gone`: resolved meanwhile. */
export type AttemptOutcome =
  | { kind: 'resolved', resolved: Resolved, status: string }
  | { kind: 'unknown' }
  | { kind: 'error', cause: string }
  | { kind: 'busy' }
  | { kind: 'gone' }

export interface RecoveryOptions {
  store: Store
  resolver: Resolving
  status: Pick<StatusClient, 'ask'>
  logger: Logger
  /** Identifies this replica as a lock owner. */
  owner: string
  /** How long after it became uncertain an operation is still asked about. */
  windowMs: number
  /** Questions in flight at once, process-wide. */
  concurrency: number
  clock?: Clock
  /** Told after every attempt (tests wait on it instead of sleeping). */
  onAttempt?: (target: RecoveryTarget, outcome: AttemptOutcome) => void
}

/** Delays between attempts: at once, then doubling from one second, at most a minute apart. */
export function backoffMs (attempt: number): number {
  return attempt <= 0 ? 0 : Math.min(60_000, 1000 * 2 ** (attempt - 1))
}

interface Job {
  target: RecoveryTarget
  /** Attempts made so far. */
  attempts: number
  until: number
  timer: unknown
}

/**
 * Asks status URLs about uncertain writes in the background: at once, then
 * with backoff until the window closes. Never on a batch's path. At most
 * `concurrency` questions at once (the rest queue); one replica at a time
 * per operation, through a short lock in the store.
 */
export class Recovery {
  readonly #opts: RecoveryOptions
  readonly #clock: Clock
  readonly #jobs = new Map<string, Job>()
  readonly #due: Job[] = []
  #running = 0
  #closed = false

  constructor (opts: RecoveryOptions) {
    this.#opts = opts
    this.#clock = opts.clock ?? systemClock
  }

  /** Operations this process is recovering. */
  get pending (): number {
    return this.#jobs.size
  }

  /** Starts recovering an operation (at once), unless this process already is. */
  start (target: RecoveryTarget): void {
    if (this.#closed || this.#jobs.has(target.operationId)) return
    const job: Job = { target, attempts: 0, until: this.#clock.now() + this.#opts.windowMs, timer: null }
    this.#jobs.set(target.operationId, job)
    this.#enqueue(job)
  }

  /** One attempt now, outside the schedule and the concurrency bound (an operator asked). */
  async recheck (target: RecoveryTarget): Promise<AttemptOutcome> {
    const outcome = await this.#attempt(target)
    this.#opts.onAttempt?.(target, outcome)
    return outcome
  }

  close (): void {
    this.#closed = true
    for (const job of this.#jobs.values()) if (job.timer !== null) this.#clock.clearTimeout(job.timer)
    this.#jobs.clear()
    this.#due.length = 0
  }

  #enqueue (job: Job): void {
    this.#due.push(job)
    this.#pump()
  }

  #pump (): void {
    while (this.#running < this.#opts.concurrency && this.#due.length > 0) {
      const job = this.#due.shift()!
      this.#running++
      void this.#run(job).finally(() => {
        this.#running--
        this.#pump()
      })
    }
  }

  async #run (job: Job): Promise<void> {
    if (this.#closed) return
    job.attempts++
    const outcome = await this.#attempt(job.target)
    if (this.#closed) return
    this.#next(job, outcome)
    // Told once the next attempt is scheduled (or not), so a test's clock can move on at once.
    this.#opts.onAttempt?.(job.target, outcome)
  }

  #next (job: Job, outcome: AttemptOutcome): void {
    if (outcome.kind === 'resolved' || outcome.kind === 'gone') {
      this.#jobs.delete(job.target.operationId)
      return
    }
    const delay = backoffMs(job.attempts)
    if (this.#clock.now() + delay > job.until) {
      this.#jobs.delete(job.target.operationId)
      this.#opts.logger.warn({ runId: job.target.runId, operationId: job.target.operationId, attempts: job.attempts },
        'recovery window passed: the uncertain write stays unresolved until resolved by hand or rechecked')
      return
    }
    job.timer = this.#clock.setTimeout(() => {
      job.timer = null
      this.#enqueue(job)
    }, delay)
  }

  /** Asks once, under the operation's lock, and resolves on a definitive answer. Never rejects. */
  async #attempt (target: RecoveryTarget): Promise<AttemptOutcome> {
    const { store, resolver, owner } = this.#opts
    const lock = `recover:${target.operationId}`
    let outcome: AttemptOutcome
    let locked = false
    try {
      if (await resolver.find(target.runId, target.operationId) === undefined) {
        outcome = { kind: 'gone' }
      } else if (!(locked = await store.tryLock(lock, owner, target.timeoutMs + LOCK_SLACK_MS))) {
        outcome = { kind: 'busy' }
      } else {
        outcome = await this.#ask(target)
      }
    } catch (err) {
      outcome = { kind: 'error', cause: (err as { code?: string }).code ?? 'store_failed' }
    } finally {
      // Not released, the lock lapses after its ttl: another replica waits that long at most.
      if (locked) await store.unlock(lock, owner).catch((err: unknown) => this.#opts.logger.warn({ operationId: target.operationId, err: { message: (err as Error).message } }, 'Store failed to release a recovery lock; it lapses after its ttl'))
    }
    return outcome
  }

  async #ask (target: RecoveryTarget): Promise<AttemptOutcome> {
    const answer: StatusAnswer = await this.#opts.status.ask(target.statusUrl, target.operationId, target.timeoutMs)
    if (answer.kind !== 'resolved') return answer
    const resolved = await this.#opts.resolver.resolve(target.runId, target.operationId, answer.outcome, 'status_url')
    return resolved === undefined ? { kind: 'gone' } : { kind: 'resolved', resolved, status: answer.outcome.status }
  }
}

/** A lock outlives one question by this much, so it cannot lapse while the answer is being recorded. */
const LOCK_SLACK_MS = 5000

/** What one question to a status URL gave. */
export type StatusAnswer =
  | { kind: 'resolved', outcome: Outcome }
  /** The executor does not know (yet): the uncertainty stays open. */
  | { kind: 'unknown' }
  /** No usable answer (refused, timed out, 5xx, unreadable): asked again later. */
  | { kind: 'error', cause: string }

/** Status answers are small; anything larger is not a status answer. */
const MAX_STATUS_BYTES = 64 * 1024
const RESOLVING = new Set(['committed', 'rejected', 'failed'])

/**
 * Asks executors' status URLs `GET statusUrl?operationId=<id>` (SPEC
 * section 14). One Agent for the process; redirects are not followed.
 */
export class StatusClient {
  readonly #agent = new Agent({ connections: 16, keepAliveTimeout: 10_000 })

  async ask (statusUrl: string, operationId: string, timeoutMs: number): Promise<StatusAnswer> {
    const url = new URL(statusUrl)
    url.searchParams.set('operationId', operationId)
    const signal = AbortSignal.timeout(timeoutMs)
    let text: string
    try {
      const res = await this.#agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'GET',
        headers: { accept: 'application/json' },
        signal,
        // The signal is the one deadline; undici's coarse timers could fire before it.
        headersTimeout: 0,
        bodyTimeout: 0
      })
      if (res.statusCode < 200 || res.statusCode >= 300) {
        await res.body.dump()
        return { kind: 'error', cause: `http_${res.statusCode}` }
      }
      let size = 0
      const chunks: Buffer[] = []
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length
        if (size > MAX_STATUS_BYTES) {
          res.body.destroy()
          return { kind: 'error', cause: 'answer_too_large' }
        }
        chunks.push(chunk as Buffer)
      }
      text = Buffer.concat(chunks).toString('utf8')
    } catch (err) {
      return { kind: 'error', cause: signal.aborted ? 'timeout' : String((err as { code?: string }).code ?? 'request_failed') }
    }
    return interpretStatus(text)
  }

  async close (): Promise<void> {
    await this.#agent.close()
  }
}

/** `{"status": "committed" | "rejected" | "failed" | "unknown", "result"?, "stateRevision"?}`; anything else is an error. */
export function interpretStatus (text: string): StatusAnswer {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return { kind: 'error', cause: 'unreadable_answer' }
  }
  if (!isObject(body)) return { kind: 'error', cause: 'unreadable_answer' }
  if (body.status === 'unknown') return { kind: 'unknown' }
  if (typeof body.status !== 'string' || !RESOLVING.has(body.status)) return { kind: 'error', cause: 'unreadable_answer' }
  if (body.result !== undefined && !isObject(body.result)) return { kind: 'error', cause: 'unreadable_answer' }
  const rev = body.stateRevision
  if (rev !== undefined && rev !== null && typeof rev !== 'string' && !(typeof rev === 'number' && Number.isFinite(rev))) {
    return { kind: 'error', cause: 'unreadable_answer' }
  }
  const outcome: Outcome = { status: body.status as Outcome['status'] }
  if (body.result !== undefined) outcome.result = body.result as Record<string, unknown>
  if (rev !== undefined && rev !== null) outcome.stateRevision = rev as string | number
  return { kind: 'resolved', outcome }
}
