import type { BatchAnswers } from './batch-answers.js'
import type { CancelBus } from './cancel-bus.js'
import type { ReceiptJournal } from './receipt-journal.js'
import type { RunStateStore } from './run-state.js'
import type { UncertainWrites } from './uncertain-writes.js'
import type { WriteAhead } from './write-ahead.js'
import type { TenantKeys } from './tenant-keys.js'

export type { BatchAnswers } from './batch-answers.js'
export type { CancelBus } from './cancel-bus.js'
export type { ReceiptJournal } from './receipt-journal.js'
export type { RunStateStore } from './run-state.js'
export type { UncertainWrites } from './uncertain-writes.js'
export type { LeaseHolder, PendingWrite, WriteAhead } from './write-ahead.js'
export { type Incarnation, type RunIdentity, incarnationKey, isIncarnation } from '../model/incarnation.js'
export type { KeyGrant, KeyHolder, KeyRequest, TenantKeys, TenantUncertainty } from './tenant-keys.js'
export {
  type BatchEntry, type BatchIdEntry, type BatchRecord, type BatchSummary, type CancelListener, type CancelReason, type RunCursor, type RunPage,
  type SharedCompletion, type StoredReceipt, type UpdateResult, StoreFullError, StoreUnavailableError, TenantRunsQuotaError, TenantWaitingQuotaError, batchEntry, holds, markEnded
} from './records.js'

/** What a store part needs besides its contract: whether its backend can take work, and closing it. */
export interface StoreBackend {
  /** True when the backend can take work (a shared one is reachable). */
  ready (): Promise<boolean>
  close (): Promise<void>
}

/** The contracts a `Store` is composed of, and the backends behind them (one per distinct backend, each closed once). */
export interface StoreParts {
  runs: RunStateStore
  batches: BatchAnswers
  receipts: ReceiptJournal
  uncertain: UncertainWrites
  /** Write-ahead records: answered by `runs.completeBatch`, so from the same backend as the run state. */
  writes: WriteAhead
  cancel: CancelBus
  keys: TenantKeys
  backends: readonly StoreBackend[]
}

/**
 * Everything replicas share, as the engine, the routes and the services
 * call it: the store contracts composed (src/store/compose.ts), ready when
 * every backend is.
 */
export interface Store extends RunStateStore, BatchAnswers, ReceiptJournal, UncertainWrites, WriteAhead, CancelBus, TenantKeys {
  /** True when the store can take work (a shared store is reachable). */
  ready (): Promise<boolean>
  close (): Promise<void>
}
