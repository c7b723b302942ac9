import type { Logger } from 'pino'
import { type Clock, systemClock } from '../clock.js'
import type { Store } from '../store/types.js'
import type { Resolved, UncertainResolver } from './resolver.js'
import type { StatusAnswer, StatusClient } from './status-check.js'

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
  resolver: UncertainResolver
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
