import type { Receipt } from '../model/receipt.js'
import type { StoredReceipt } from './records.js'

/**
 * The receipts journal: one receipt per operation id (the first writer
 * wins), each run's operations in the order first stored. A receipt is kept
 * while its run is held and for the retention time after, so an
 * implementation learns when runs go from the run state it is deployed
 * with (see each implementation).
 */
export interface ReceiptJournal {
  /**
   * Stores a receipt unless one with the same operationId exists (the first
   * writer wins); answers the stored one, which is `receipt` itself when this
   * call stored it. A new operation enters its run's journal here. With
   * `pending`, the receipt is stored as the pending receipt of the dispatch
   * that token names (the token is kept beside the receipt, never in it):
   * `settleReceipt` with the same token may replace it.
   *
   * With `runCreatedAt`, the creation time of the run the writer's batch ran
   * in (with `tenant`, its incarnation): when the run held under
   * `receipt.runId` now is another incarnation (SPEC section 19), the
   * receipt is stored, reachable by its operation id to its tenant, with its
   * retention started, but never enters that run's journal.
   */
  putReceipt (receipt: Receipt, tenant: string, pending?: string, runCreatedAt?: number): Promise<Receipt>
  /**
   * Replaces the pending receipt stored under `pending` with the operation's
   * final receipt (`tenant` as given to putReceipt), in place: the same
   * journal entry and expiry, no token any more. Only while the stored
   * receipt is still that pending one: a final receipt, another dispatch's
   * pending receipt or a missing one is left as it is. Answers whether it
   * replaced it.
   */
  settleReceipt (receipt: Receipt, tenant: string, pending: string): Promise<boolean>
  /** A receipt with the tenant of its run, which alone may read it. */
  getReceipt (operationId: string): Promise<StoredReceipt | undefined>
  /** The run's receipts in the order their operations were first stored. */
  listReceipts (runId: string): Promise<Receipt[]>
  /**
   * Rewrites a stored receipt atomically: `fn` gets the current receipt and
   * answers its replacement, or undefined to leave it. The replacement keeps
   * the journal entry and expiry; a pending dispatch's token is dropped (a
   * late answer of that dispatch no longer settles it). Answers what is
   * stored after, or undefined when there is no such receipt.
   */
  reviseReceipt (operationId: string, fn: (receipt: Receipt) => Receipt | undefined): Promise<Receipt | undefined>
}
