import { incarnationKey } from '../model/incarnation.js'
import { type Clock, type TimerHandle, clockReader, systemClock } from '../clock.js'
import { CancelListeners, type CancelBus } from './cancel-bus.js'
import { ComposedStore } from './compose.js'
import { MemoryReceiptJournal } from './memory-receipts.js'
import { MemoryRunState } from './memory-runs.js'
import { MemoryUncertainWrites } from './memory-uncertain.js'
import { MemoryWriteAhead } from './memory-write-ahead.js'
import { MemoryTenantKeys } from './memory-keys.js'
import { type CancelListener, type CancelReason } from './records.js'

export { StoreFullError } from './records.js'

/** Bounds and clocks of the memory store. */
export interface MemoryStoreOptions {
  /** Idle runs expire this long after their last use. */
  runTtlMs: number
  /** Most runs held; see `createRun` for who is evicted. */
  maxRuns: number
  /** Most runs one tenant holds; one more is refused (TenantRunsQuotaError). @default no bound */
  maxRunsPerTenant?: number
  /** Most runs of one tenant with a waiting batch; one more is refused (TenantWaitingQuotaError). @default no bound */
  maxWaitingPerTenant?: number
  /** Most unresolved uncertain writes one tenant's list keeps (GET /v1/uncertain); past it the oldest are dropped. @default MAX_TENANT_UNCERTAIN */
  maxUncertainPerTenant?: number
  /** Receipts outlive their run by at least this long. */
  receiptRetentionMs: number
  /** Most receipts held. */
  maxReceipts: number
  /** Most bytes of receipts held (their JSON text); over it the tenant holding the most gives up its oldest. @default DEFAULT_MAX_RECEIPT_BYTES */
  maxReceiptBytes?: number
  /** Most bytes of batch answers held for resends; over it the tenant holding the most gives up runs (MemoryRunOptions). @default no bound */
  maxAnswerBytes?: number
  /** Reads the time of runs' use and expiry, receipts' retention and locks, and runs the sweep. @default systemClock */
  clock?: Clock
  /** How often expired runs and receipts are swept; 0 sweeps only on access. */
  sweepIntervalMs?: number
}

/** The cancel bus of one process: its listeners are every replica there is. */
export class MemoryCancelBus implements CancelBus {
  readonly #listeners = new CancelListeners()

  async publishCancel (runId: string, reason: CancelReason): Promise<void> {
    this.#listeners.deliver(runId, reason)
  }

  onCancel (listener: CancelListener): () => void {
    return this.#listeners.add(listener)
  }
}

/**
 * The default store: one process, everything in maps, each contract its own
 * part. The parts share one clock, and the journal and the uncertain index
 * follow the run state's runs (a run that leaves orphans its receipts and
 * un-indexes its uncertain writes in the same step).
 */
export class MemoryStore extends ComposedStore {
  readonly #runs: MemoryRunState
  readonly #receipts: MemoryReceiptJournal
  readonly #uncertain: MemoryUncertainWrites
  readonly #clock: Clock
  #timer: TimerHandle | null = null

  constructor (options: MemoryStoreOptions) {
    const clock = options.clock ?? systemClock
    const opts = { sweepIntervalMs: Math.min(60_000, options.runTtlMs), ...options, now: clockReader(clock) }
    const runs = new MemoryRunState(opts)
    const receipts = new MemoryReceiptJournal({
      ...opts,
      runHeld: (runId) => runs.has(runId),
      incarnationOf: (runId) => {
        const run = runs.peek(runId)
        return run === undefined ? undefined : incarnationKey(run)
      }
    })
    const uncertain = new MemoryUncertainWrites(runs, opts.now)
    const writes = new MemoryWriteAhead(runs, uncertain, opts.now)
    const keys = new MemoryTenantKeys(clock, (runId) => {
      const run = runs.peek(runId)
      return run === undefined ? undefined : incarnationKey(run)
    }, opts.maxUncertainPerTenant)
    runs.onGone((run, at) => {
      uncertain.forget(run)
      writes.drop(run)
      keys.forgetRun(run.tenant, run.runId)
      receipts.orphan(run.runId, at)
    })
    runs.onCompleted((run, answered) => { if (answered === null) writes.drop(run); else writes.answer(run, answered) })
    runs.onCreated((runId) => receipts.restart(runId))
    super({
      runs,
      batches: runs.answers,
      receipts,
      uncertain,
      writes,
      cancel: new MemoryCancelBus(),
      keys,
      // Nothing to reach or close: always ready.
      backends: []
    })
    this.#runs = runs
    this.#receipts = receipts
    this.#uncertain = uncertain
    this.#clock = clock
    if (opts.sweepIntervalMs > 0) {
      this.#timer = clock.setInterval(() => this.sweep(), opts.sweepIntervalMs)
    }
  }

  override async close (): Promise<void> {
    if (this.#timer !== null) this.#clock.clearInterval(this.#timer)
    this.#timer = null
    await super.close()
  }

  /** Drops lapsed locks, expired runs (oldest first) and receipts past retention. */
  sweep (): void {
    this.#uncertain.sweep()
    this.#runs.sweep()
    this.#receipts.sweep()
  }
}
