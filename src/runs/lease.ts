/**
 * A run's lease, in one place. A batch takes it in the run's atomic step
 * that starts it; this process renews it every third of its length while
 * the batch runs (one timer for every batch here); it is released with the
 * batch's answer, in the store's same atomic step, or alone when the batch
 * failed. A renewal that finds the lease gone (another replica took it over)
 * or the run stopped stops the batch: nothing more of it starts.
 */
import type { Logger } from 'pino'
import type { Clock, TimerHandle } from '../clock.js'
import type { RunRecord } from '../model/run.js'
import type { StopSwitch } from '../schedule/types.js'
import { type BatchRecord, type Incarnation, type SharedCompletion, type Store, holds } from '../store/types.js'

/** Who takes a lease, and for how long. */
export interface LeaseTerms {
  /** Identifies this process in a run's lease. */
  replicaId: string
  /** How long a lease lasts without renewal. */
  leaseMs: number
  /** The clock leases expire on. */
  clock: Clock
  /** Where a store that cannot renew or release a lease is logged (the metered store counts it). */
  logger?: Pick<Logger, 'warn'> | undefined
}

/** Inside the run's atomic update: whether any batch holds the run's lease at `now`. */
export function leased (run: RunRecord, now: number): boolean {
  return run.inFlight !== null && run.inFlight.leaseExpiresAt > now
}

/** Inside the run's atomic update: the lease is `batchId`'s, on this replica, for a lease's length from `now`. */
export function takeLease (run: RunRecord, batchId: string, terms: LeaseTerms, now: number): void {
  run.inFlight = { batchId, owner: terms.replicaId, leaseExpiresAt: now + terms.leaseMs }
}

/** Whether the run's lease is this batch's, taken by `owner`. */
export function holdsLease (run: RunRecord, owner: string, batchId: string): boolean {
  return holds(run, owner, batchId)
}

/**
 * Stores a finished batch's answer and releases its lease in one atomic
 * step (`Store.completeBatch`): false when the lease passed to another
 * replica, whose answer then stands, or when the run held under the id is
 * a later incarnation than the batch's.
 */
export function releaseWithAnswer (store: Store, runId: string, terms: LeaseTerms, record: BatchRecord | ((run: RunRecord) => BatchRecord), incarnation: Incarnation, shared?: SharedCompletion): Promise<boolean> {
  return store.completeBatch(runId, terms.replicaId, record, incarnation, shared)
}

/** Releases the lease of a batch that failed (a bug must not leave its run leased forever); a store that cannot is logged and left to the lease's expiry. */
export async function releaseAfterFailure (store: Store, runId: string, batchId: string, logger?: Pick<Logger, 'warn'>): Promise<void> {
  await store.updateRun(runId, (r) => {
    if (r.inFlight?.batchId === batchId) r.inFlight = null
  }).catch((err: unknown) => {
    logger?.warn({ runId, batchId, err: { message: (err as Error).message } }, 'Store failed to release the lease of a failed batch; the run is free once the lease expires')
  })
}

/** What the lease keeper stops: a batch's stop switch, or a shared lease's (every batch under it). */
export type LeaseSwitch = Pick<StopSwitch, 'abort' | 'holdUntil'>

/** A batch running in this process: its stop switch, and the batch whose lease it holds (a shared lease's id, for the batches under one). */
export interface RunningBatch { controller: LeaseSwitch, batchId: string }

/**
 * A run's lease shared by several of its batches in this process: the MCP
 * calls of one run, each a batch of one call, that arrive together and may
 * run side by side (src/mcp-server/turns.ts schedules them). The first
 * batch under it takes the run's lease under the shared lease's id, in its
 * own starting step; the others join it in theirs; the last one's answer
 * releases it (`completion`). To the lease keeper it is one running batch:
 * a renewal that finds it lost, a cancel or the run's end stops every batch
 * under it. A shared lease that was released or stopped takes no more
 * batches (`open` is false): the next call starts another.
 */
export class SharedLease implements LeaseSwitch {
  readonly id: string
  readonly runId: string
  /** The stop switches of the batches under it. */
  readonly #members = new Set<StopSwitch>()
  /** Batches between their starting step's request and their answer. */
  #inside = 0
  #validUntil = Infinity
  #stopped = false
  #reason: unknown = undefined
  /** The run's lease is held under this id (a batch's starting step took it), as far as this process knows. */
  #taken = false
  /** Set when its last batch's answer releases it, until that update settles. */
  #closing: Promise<unknown> | null = null
  /** Whether more batches are about to start under it (calls waiting their turn): the last answer keeps the lease for them. */
  readonly #expectMore: () => boolean

  constructor (id: string, runId: string, expectMore: () => boolean) {
    this.id = id
    this.runId = runId
    this.#expectMore = expectMore
  }

  /** Whether another batch may start under it. */
  get open (): boolean {
    return !this.#stopped && this.#closing === null
  }

  /** Settles once the update that released it has (null while it is held or was never taken). */
  get closing (): Promise<unknown> | null {
    return this.#closing
  }

  /** Whether the run's lease is held under it as far as this process knows. */
  get taken (): boolean {
    return this.#taken && this.#closing === null
  }

  /** Batches under it, from their starting step to their answer. */
  get inside (): number {
    return this.#inside
  }

  /** A batch is about to ask for the run under this lease (its starting step); `exit` once it has its answer. */
  enter (): void {
    this.#inside++
  }

  exit (): void {
    this.#inside--
  }

  /** A batch's starting step took or joined the run's lease under this id; answers whether it took it (the keeper must renew it). */
  started (): boolean {
    const first = !this.#taken
    this.#taken = true
    return first
  }

  /** A batch under it runs with `controller`: stopped with the shared lease, held to its expiry. */
  join (controller: StopSwitch): void {
    if (this.#stopped) {
      controller.abort(this.#reason)
      return
    }
    if (this.#validUntil !== Infinity) controller.holdUntil(this.#validUntil)
    this.#members.add(controller)
  }

  leave (controller: StopSwitch): void {
    this.#members.delete(controller)
  }

  abort (reason: unknown): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#reason = reason
    for (const m of this.#members) m.abort(reason)
  }

  holdUntil (at: number): void {
    this.#validUntil = at
    for (const m of this.#members) m.holdUntil(at)
  }

  /**
   * How a batch under it completes, decided as its answer is stored: the
   * last one in, with no call waiting to start under it, releases the lease
   * with its answer; `released` is then told when that update settled.
   */
  completion (answeredWrites: readonly string[]): SharedCompletion {
    const release = this.#closing === null && this.#inside <= 1 && !this.#expectMore()
    return { leaseId: this.id, release, answeredWrites }
  }

  /** The answer that releases the lease is being stored: nothing more starts under it until `promise` settles. */
  releasing (promise: Promise<unknown>): void {
    this.#closing = promise
  }
}

/** Leases are renewed every third of their length, but never more often than this. */
const MIN_RENEWAL_MS = 100

/**
 * The batches running in this process, by run, each under its run's lease:
 * one timer renews them all, rather than a timer made and cleared per batch.
 */
export class LeaseKeeper {
  readonly #store: Store
  readonly #terms: LeaseTerms
  readonly #running = new Map<string, RunningBatch>()
  readonly #renewal: TimerHandle
  /** The store failed the last renewal: logged once until one succeeds again. */
  #failing = false

  constructor (store: Store, terms: LeaseTerms) {
    this.#store = store
    this.#terms = terms
    this.#renewal = terms.clock.setInterval(() => { this.#renewAll() }, Math.max(MIN_RENEWAL_MS, Math.floor(terms.leaseMs / 3)))
  }

  /** Stops renewing. */
  close (): void {
    this.#terms.clock.clearInterval(this.#renewal)
  }

  /** Batches running in this process. */
  get size (): number {
    return this.#running.size
  }

  /** The batch of a run running in this process. */
  running (runId: string): RunningBatch | undefined {
    return this.#running.get(runId)
  }

  /**
   * Renews the lease of a batch that took it (`run` as that step left it)
   * until `release`; nothing of it starts once the lease could have passed
   * to another replica (a pause, a store that cannot renew it).
   */
  keep (run: RunRecord, batch: RunningBatch): void {
    if (run.inFlight !== null) batch.controller.holdUntil(run.inFlight.leaseExpiresAt - this.#margin())
    this.#running.set(run.runId, batch)
  }

  /** Stops renewing the lease of a run's batch (its answer released it, or it failed). */
  release (runId: string): void {
    this.#running.delete(runId)
  }

  #renewAll (): void {
    for (const [runId, batch] of this.#running) this.#renew(runId, batch)
  }

  /**
   * Pushes a running batch's lease on. A cancel published while this replica
   * could not hear it still shows in the run's state; a lease another batch
   * took over means this one must not start anything more.
   */
  #renew (runId: string, { controller, batchId }: RunningBatch): void {
    const { replicaId, leaseMs, clock } = this.#terms
    // Counted from before the store was asked: the lease it writes lasts at least this long.
    const asked = clock.now()
    this.#store.updateRun(runId, (r) => {
      const held = holds(r, replicaId, batchId)
      if (held) r.inFlight!.leaseExpiresAt = clock.now() + leaseMs
      return { state: r.state, held }
    }).then((renewed) => {
      this.#failing = false
      const state = renewed.found ? renewed.value.state : 'ended'
      if (state === 'cancelled' || state === 'ended') controller.abort(state)
      else if (renewed.found && !renewed.value.held) controller.abort('lease_lost')
      else if (renewed.found) controller.holdUntil(asked + leaseMs - this.#margin())
    }, (err: unknown) => {
      // The next renewal tries again; meanwhile nothing of the batch starts past the lease it holds.
      if (!this.#failing) this.#terms.logger?.warn({ runId, batchId, err: { message: (err as Error).message } }, 'Store failed to renew a lease; the batch starts nothing more past its lease until a renewal succeeds')
      this.#failing = true
    })
  }

  /**
   * How long before its lease expires a batch stops starting calls: room for
   * the clocks of two replicas to differ, and for a call started just before
   * the expiry to be on its way. Renewals come every third of the lease.
   */
  #margin (): number {
    return Math.floor(this.#terms.leaseMs / 4)
  }
}
