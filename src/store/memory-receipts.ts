import { incarnationKey } from '../model/incarnation.js'
import type { Receipt } from '../model/receipt.js'
import { type StoredReceipt } from './records.js'
import type { ReceiptJournal } from './receipt-journal.js'
import { TenantBytes } from './tenant-bytes.js'

/** Bounds and clock of the memory journal. */
export interface MemoryJournalOptions {
  /** Receipts outlive their run by at least this long. */
  receiptRetentionMs: number
  /** Most receipts held. */
  maxReceipts: number
  /**
   * Most bytes of receipts held, counted as their JSON text. Over it, the
   * tenant holding the most gives up its oldest first, so a tenant of large
   * receipts makes room from its own.
   * @default DEFAULT_MAX_RECEIPT_BYTES
   */
  maxReceiptBytes?: number
  now: () => number
  /** Whether a run is held: a receipt of a run that is not starts its retention at once. */
  runHeld: (runId: string) => boolean
  /** The incarnation (incarnationKey) of the run held under an id, if one is. @default none checked */
  incarnationOf?: (runId: string) => string | undefined
}

interface HeldReceipt extends StoredReceipt {
  /** when the run went away, or null while it lives */
  orphanedAt: number | null
  /** the token of the dispatch whose pending receipt this is, or null once final */
  pending: string | null
  /** the receipt's size as JSON text */
  bytes: number
}

/** The default of `maxReceiptBytes`: 128 MiB of JSON text, about twice that of heap. */
export const DEFAULT_MAX_RECEIPT_BYTES = 128 * 1024 * 1024

/** A receipt's size as the journal counts it: its JSON text. */
function sizeOf (receipt: Receipt): number {
  return JSON.stringify(receipt).length
}


/**
 * The receipts journal in one process. Its retention follows the runs of the
 * run state it is given (`runHeld`, and `orphan` when one leaves).
 */
export class MemoryReceiptJournal implements ReceiptJournal {
  readonly #receipts = new Map<string, HeldReceipt>()
  readonly #byRun = new Map<string, string[]>()
  /** Each tenant's receipts' operation ids, in the order they came. */
  readonly #idsOfTenant = new Map<string, Set<string>>()
  readonly #bytes = new TenantBytes()
  readonly #opts: MemoryJournalOptions
  readonly #maxBytes: number

  constructor (opts: MemoryJournalOptions) {
    this.#opts = opts
    this.#maxBytes = opts.maxReceiptBytes ?? DEFAULT_MAX_RECEIPT_BYTES
  }

  /** Bytes of receipts held (their JSON text). */
  get bytes (): number {
    return this.#bytes.total
  }

  async putReceipt (receipt: Receipt, tenant: string, pending?: string, runCreatedAt?: number): Promise<Receipt> {
    const existing = this.#receipts.get(receipt.operationId)
    if (existing !== undefined) return existing.receipt
    const current = runCreatedAt === undefined ? undefined : this.#opts.incarnationOf?.(receipt.runId)
    // A late write of an earlier incarnation of the run id: kept by operation id, out of the later run's journal.
    const foreign = current !== undefined && current !== incarnationKey({ tenant, createdAt: runCreatedAt! })
    const held = !foreign && this.#opts.runHeld(receipt.runId)
    const bytes = sizeOf(receipt)
    this.#receipts.set(receipt.operationId, { receipt, tenant, orphanedAt: held ? null : this.#opts.now(), pending: pending ?? null, bytes })
    this.#count(tenant, receipt.operationId, bytes)
    if (!foreign) {
      let ids = this.#byRun.get(receipt.runId)
      if (ids === undefined) this.#byRun.set(receipt.runId, (ids = []))
      ids.push(receipt.operationId)
    }
    this.#bound(receipt.operationId)
    return receipt
  }

  async settleReceipt (receipt: Receipt, _tenant: string, pending: string): Promise<boolean> {
    const held = this.#receipts.get(receipt.operationId)
    if (held === undefined || held.pending !== pending || this.#expired(held)) return false
    // In place: the map's order, the journal entry and the retention clock stay the pending one's.
    this.#resize(held, receipt)
    held.pending = null
    this.#bound(receipt.operationId)
    return true
  }

  async getReceipt (operationId: string): Promise<StoredReceipt | undefined> {
    const stored = this.#receipts.get(operationId)
    if (stored === undefined) return undefined
    if (this.#expired(stored)) {
      this.#drop(operationId)
      return undefined
    }
    return { receipt: stored.receipt, tenant: stored.tenant }
  }

  async listReceipts (runId: string): Promise<Receipt[]> {
    const out: Receipt[] = []
    for (const id of this.#byRun.get(runId) ?? []) {
      const r = await this.getReceipt(id)
      if (r !== undefined) out.push(r.receipt)
    }
    return out
  }

  async reviseReceipt (operationId: string, fn: (receipt: Receipt) => Receipt | undefined): Promise<Receipt | undefined> {
    const held = (await this.getReceipt(operationId)) === undefined ? undefined : this.#receipts.get(operationId)
    if (held === undefined) return undefined
    const next = fn(held.receipt)
    if (next === undefined) return held.receipt
    this.#resize(held, next)
    held.pending = null
    this.#bound(operationId)
    return next
  }

  /** The run left the store at `at`: its receipts' retention starts. */
  orphan (runId: string, at: number): void {
    for (const id of this.#byRun.get(runId) ?? []) {
      const stored = this.#receipts.get(id)
      if (stored !== undefined && stored.orphanedAt === null) stored.orphanedAt = at
    }
  }

  /**
   * A new run of this id was stored: the journal lists only its receipts from
   * now on. The earlier run's receipts stay, reachable by operation id
   * (their tenant alone), until their retention ends.
   */
  restart (runId: string): void {
    this.#byRun.delete(runId)
  }

  /** Drops receipts past retention. */
  sweep (): void {
    for (const [id, stored] of this.#receipts) {
      if (stored.orphanedAt === null) continue
      if (this.#expired(stored)) this.#drop(id)
    }
  }

  #expired (stored: HeldReceipt): boolean {
    return stored.orphanedAt !== null && stored.orphanedAt + this.#opts.receiptRetentionMs <= this.#opts.now()
  }

  #drop (operationId: string): void {
    const stored = this.#receipts.get(operationId)
    if (stored === undefined) return
    this.#receipts.delete(operationId)
    this.#bytes.add(stored.tenant, -stored.bytes)
    const ofTenant = this.#idsOfTenant.get(stored.tenant)
    ofTenant?.delete(operationId)
    if (ofTenant?.size === 0) this.#idsOfTenant.delete(stored.tenant)
    const ids = this.#byRun.get(stored.receipt.runId)
    if (ids === undefined) return
    // Absent when the list is a later run's of the same id (see restart).
    const i = ids.indexOf(operationId)
    if (i >= 0) ids.splice(i, 1)
    if (ids.length === 0) this.#byRun.delete(stored.receipt.runId)
  }

  #count (tenant: string, operationId: string, bytes: number): void {
    let ids = this.#idsOfTenant.get(tenant)
    if (ids === undefined) this.#idsOfTenant.set(tenant, (ids = new Set()))
    ids.add(operationId)
    this.#bytes.add(tenant, bytes)
  }

  /** A held receipt replaced by `next`: its bytes counted again. */
  #resize (held: HeldReceipt, next: Receipt): void {
    const bytes = sizeOf(next)
    this.#bytes.add(held.tenant, bytes - held.bytes)
    held.bytes = bytes
    held.receipt = next
  }

  /** Both bounds kept, `keep` (the receipt just written) given up last. */
  #bound (keep: string): void {
    if (this.#receipts.size > this.#opts.maxReceipts) this.#evict()
    if (this.#bytes.total > this.#maxBytes) this.#evictBytes(keep)
  }

  /**
   * Over the bytes: the tenant holding the most gives up its oldest receipt,
   * again until the journal fits, so a tenant of large receipts makes room
   * from its own before any other loses one. A receipt larger than the
   * whole bound stays until the next one comes: the one just written is the
   * last to go.
   */
  #evictBytes (keep: string): void {
    while (this.#bytes.total > this.#maxBytes) {
      const tenant = this.#bytes.largest()
      const victim = tenant === undefined ? undefined : this.#oldestOf(tenant, keep)
      if (victim === undefined) return
      this.#drop(victim)
    }
  }

  /** The tenant's oldest receipt, never `keep`. */
  #oldestOf (tenant: string, keep: string): string | undefined {
    for (const id of this.#idsOfTenant.get(tenant) ?? []) if (id !== keep) return id
    return undefined
  }

  /** Over the bound: receipts of runs that are gone go first, oldest first; then the oldest of all. */
  #evict (): void {
    for (const [id, stored] of this.#receipts) {
      if (this.#receipts.size <= this.#opts.maxReceipts) return
      if (stored.orphanedAt !== null) this.#drop(id)
    }
    for (const id of this.#receipts.keys()) {
      if (this.#receipts.size <= this.#opts.maxReceipts) return
      this.#drop(id)
    }
  }
}
