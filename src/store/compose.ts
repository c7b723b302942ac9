import type { Incarnation, RunIdentity } from '../model/incarnation.js'
import type { Receipt } from '../model/receipt.js'
import type { RunRecord } from '../model/run.js'
import type { Uncertainty } from '../model/uncertainty.js'
import type { BatchEntry, BatchIdEntry, BatchRecord, CancelListener, CancelReason, RunCursor, RunPage, SharedCompletion, StoredReceipt, UpdateResult } from './records.js'
import type { KeyGrant, KeyRequest, Store, StoreParts, TenantUncertainty } from './types.js'
import type { LeaseHolder, PendingWrite } from './write-ahead.js'

/**
 * The `Store` the engine uses, built from its parts: each method hands its
 * arguments to the part whose contract it belongs to and returns that
 * part's promise as is (no await, no allocation of its own), so composing
 * costs a batch nothing. A deployment may take a part from another backend
 * as long as it keeps the pairs the contracts name (batch answers with the
 * run state that writes them).
 */
export class ComposedStore implements Store {
  readonly #runs: StoreParts['runs']
  readonly #batches: StoreParts['batches']
  readonly #receipts: StoreParts['receipts']
  readonly #uncertain: StoreParts['uncertain']
  readonly #writes: StoreParts['writes']
  readonly #cancel: StoreParts['cancel']
  readonly #keys: StoreParts['keys']
  readonly #backends: StoreParts['backends']

  constructor (parts: StoreParts) {
    this.#runs = parts.runs
    this.#batches = parts.batches
    this.#receipts = parts.receipts
    this.#uncertain = parts.uncertain
    this.#writes = parts.writes
    this.#cancel = parts.cancel
    this.#keys = parts.keys
    this.#backends = parts.backends
  }

  createRun (run: RunRecord): Promise<boolean> { return this.#runs.createRun(run) }
  getRun (runId: string): Promise<RunRecord | undefined> { return this.#runs.getRun(runId) }
  updateRun<T> (runId: string, fn: (run: RunRecord) => T): Promise<UpdateResult<T>> { return this.#runs.updateRun(runId, fn) }
  updateRunWithBatchId<T> (runId: string, batchId: string, fn: (run: RunRecord, entry: BatchIdEntry) => T): Promise<UpdateResult<T>> {
    return this.#runs.updateRunWithBatchId(runId, batchId, fn)
  }

  endRun (runId: string, at: number, end?: (run: RunRecord) => void): Promise<RunRecord | undefined> { return this.#runs.endRun(runId, at, end) }
  completeBatch (runId: string, owner: string, record: BatchRecord | ((run: RunRecord) => BatchRecord), incarnation?: Incarnation, shared?: SharedCompletion): Promise<boolean> {
    return this.#runs.completeBatch(runId, owner, record, incarnation, shared)
  }

  recordBatch (runId: string, batchId: string, fn: (run: RunRecord, recorded: string | undefined) => BatchRecord | undefined): Promise<boolean> {
    return this.#runs.recordBatch(runId, batchId, fn)
  }

  listRuns (tenant: string, limit: number, after?: RunCursor): Promise<RunPage> { return this.#runs.listRuns(tenant, limit, after) }
  waitingRuns (): Promise<RunRecord[]> { return this.#runs.waitingRuns() }
  countRuns (): Promise<{ total: number, active: number, inFlight: number }> { return this.#runs.countRuns() }

  getBatch (runId: string, batchId: string): Promise<BatchRecord | undefined> { return this.#batches.getBatch(runId, batchId) }
  listBatches (runId: string): Promise<BatchEntry[]> { return this.#batches.listBatches(runId) }

  putReceipt (receipt: Receipt, tenant: string, pending?: string, runCreatedAt?: number): Promise<Receipt> {
    return this.#receipts.putReceipt(receipt, tenant, pending, runCreatedAt)
  }

  settleReceipt (receipt: Receipt, tenant: string, pending: string): Promise<boolean> { return this.#receipts.settleReceipt(receipt, tenant, pending) }
  getReceipt (operationId: string): Promise<StoredReceipt | undefined> { return this.#receipts.getReceipt(operationId) }
  listReceipts (runId: string): Promise<Receipt[]> { return this.#receipts.listReceipts(runId) }
  reviseReceipt (operationId: string, fn: (receipt: Receipt) => Receipt | undefined): Promise<Receipt | undefined> {
    return this.#receipts.reviseReceipt(operationId, fn)
  }

  indexUncertain (runId: string, operationIds: readonly string[]): Promise<void> { return this.#uncertain.indexUncertain(runId, operationIds) }
  unindexUncertain (operationId: string): Promise<void> { return this.#uncertain.unindexUncertain(operationId) }
  runOfUncertain (operationId: string): Promise<string | undefined> { return this.#uncertain.runOfUncertain(operationId) }
  countUncertain (): Promise<number> { return this.#uncertain.countUncertain() }
  tryLock (name: string, owner: string, ttlMs: number): Promise<boolean> { return this.#uncertain.tryLock(name, owner, ttlMs) }
  unlock (name: string, owner: string): Promise<void> { return this.#uncertain.unlock(name, owner) }

  recordWrites (run: RunIdentity, lease: LeaseHolder, writes: readonly PendingWrite[]): Promise<boolean> { return this.#writes.recordWrites(run, lease, writes) }
  pendingWrites (run: RunIdentity): Promise<PendingWrite[]> { return this.#writes.pendingWrites(run) }
  takeOverWrites (run: RunIdentity): Promise<Uncertainty[] | undefined> { return this.#writes.takeOverWrites(run) }

  publishCancel (runId: string, reason: CancelReason): Promise<void> { return this.#cancel.publishCancel(runId, reason) }
  onCancel (listener: CancelListener): () => void { return this.#cancel.onCancel(listener) }

  acquireKey (tenant: string, key: string, request: KeyRequest): Promise<KeyGrant> { return this.#keys.acquireKey(tenant, key, request) }
  renewKey (tenant: string, key: string, token: string, leaseMs: number): Promise<boolean> { return this.#keys.renewKey(tenant, key, token, leaseMs) }
  releaseKey (tenant: string, key: string, token: string): Promise<boolean> { return this.#keys.releaseKey(tenant, key, token) }
  noteTenantUncertain (tenant: string, entries: readonly TenantUncertainty[]): Promise<void> { return this.#keys.noteTenantUncertain(tenant, entries) }
  forgetTenantUncertain (tenant: string, operationIds: readonly string[]): Promise<void> { return this.#keys.forgetTenantUncertain(tenant, operationIds) }
  listTenantUncertain (tenant: string): Promise<TenantUncertainty[]> { return this.#keys.listTenantUncertain(tenant) }

  async ready (): Promise<boolean> {
    for (const backend of this.#backends) if (!await backend.ready()) return false
    return true
  }

  async close (): Promise<void> {
    await Promise.all(this.#backends.map((backend) => backend.close()))
  }
}
