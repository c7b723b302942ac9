import { incarnationKey } from '../model/incarnation.js'
import type { Receipt } from '../model/receipt.js'
import type { ReceiptJournal } from './receipt-journal.js'
import { type StoredReceipt, StoreUnavailableError } from './records.js'
import { LIST_CHUNK, type RedisConnection } from './redis-connection.js'
import { PUT_RECEIPT, SETTLE_RECEIPT } from './redis-scripts.js'
import { REVISE_RECEIPT } from './redis-uncertain-scripts.js'

/** The value of an operation's key: its receipt and tenant, and while it is pending the token of the dispatch that wrote it. */
interface HeldValue extends StoredReceipt { pending?: string }

/**
 * The receipts journal in Redis (`P op:<operationId>`, `P journal:<runId>`).
 * A receipt's expiry is read from its run's key when it is stored, and
 * pushed on by `RedisRunState`'s updates while the run lives (in the same
 * script, so keeping receipts costs a batch no command): the journal and
 * the run state share one Redis and prefix.
 */
export class RedisReceiptJournal implements ReceiptJournal {
  readonly #conn: RedisConnection
  readonly #opts: { receiptRetentionMs: number, maxUpdateAttempts: number, now: () => number }

  constructor (conn: RedisConnection, opts: { receiptRetentionMs: number, maxUpdateAttempts: number, now: () => number }) {
    this.#conn = conn
    this.#opts = opts
  }

  async putReceipt (receipt: Receipt, tenant: string, pending?: string, runCreatedAt?: number): Promise<Receipt> {
    // The token, when there is one, is the first field: SETTLE_RECEIPT compares the value's opening.
    const stored: HeldValue = pending === undefined ? { receipt, tenant } : { pending, receipt, tenant }
    const conn = this.#conn
    const existing = await conn.eval(PUT_RECEIPT,
      [conn.key('op', receipt.operationId), conn.key('journal', receipt.runId), conn.key('run', receipt.runId)],
      [JSON.stringify(stored), receipt.operationId, this.#opts.now(), this.#opts.receiptRetentionMs, runCreatedAt === undefined ? '' : incarnationKey({ tenant, createdAt: runCreatedAt })])
    return typeof existing === 'string' ? (JSON.parse(existing) as HeldValue).receipt : receipt
  }

  async settleReceipt (receipt: Receipt, tenant: string, pending: string): Promise<boolean> {
    const stored: HeldValue = { receipt, tenant }
    const replaced = await this.#conn.eval(SETTLE_RECEIPT, [this.#conn.key('op', receipt.operationId)], [pendingOpening(pending), JSON.stringify(stored)])
    return replaced === 1
  }

  async getReceipt (operationId: string): Promise<StoredReceipt | undefined> {
    const json = await this.#conn.call(() => this.#conn.redis.get(this.#conn.key('op', operationId)))
    if (json === null) return undefined
    const { receipt, tenant } = JSON.parse(json) as HeldValue
    return { receipt, tenant }
  }

  async listReceipts (runId: string): Promise<Receipt[]> {
    const conn = this.#conn
    const ids = await conn.call(() => conn.redis.lrange(conn.key('journal', runId), 0, -1))
    const out: Receipt[] = []
    for (let i = 0; i < ids.length; i += LIST_CHUNK) {
      const keys = ids.slice(i, i + LIST_CHUNK).map((id) => conn.key('op', id))
      const values = await conn.call(() => conn.redis.mget(keys))
      for (const json of values) if (json !== null) out.push((JSON.parse(json) as HeldValue).receipt)
    }
    return out
  }

  async reviseReceipt (operationId: string, fn: (receipt: Receipt) => Receipt | undefined): Promise<Receipt | undefined> {
    const key = this.#conn.key('op', operationId)
    for (let attempt = 1; attempt <= this.#opts.maxUpdateAttempts; attempt++) {
      const json = await this.#conn.call(() => this.#conn.redis.get(key))
      if (json === null) return undefined
      const held = JSON.parse(json) as HeldValue
      const next = fn(held.receipt)
      if (next === undefined) return held.receipt
      const value: HeldValue = { receipt: next, tenant: held.tenant }
      if (await this.#conn.eval(REVISE_RECEIPT, [key], [json, JSON.stringify(value)]) === 1) return next
    }
    throw new StoreUnavailableError(`Receipt ${operationId} was changed by others ${this.#opts.maxUpdateAttempts} times while this replica revised it`)
  }
}

/** How a pending receipt's stored JSON begins: `{"pending":"<token>",`. */
function pendingOpening (pending: string): string {
  return `{"pending":${JSON.stringify(pending)},`
}
