import type { RedisConnection } from './redis-connection.js'
import { COUNT_UNCERTAIN, INDEX_UNCERTAIN, RUN_OF_UNCERTAIN, TRY_LOCK, UNINDEX_UNCERTAIN, UNLOCK } from './redis-uncertain-scripts.js'
import type { UncertainWrites } from './uncertain-writes.js'

/**
 * The uncertain-write index and recovery locks in Redis (`P uop:<operationId>`,
 * `P ures:<operationId>`, `P idx:uncertain`, `P lock:<name>`). An entry is
 * kept as long as its run's key in the same Redis, read when it is noted;
 * once resolved, as long as a receipt of the run would be, and found only
 * while that run (not a later one of its id) is held.
 */
export class RedisUncertainWrites implements UncertainWrites {
  readonly #conn: RedisConnection
  readonly #opts: { runTtlMs: number, receiptRetentionMs: number, now: () => number }

  constructor (conn: RedisConnection, opts: { runTtlMs: number, receiptRetentionMs: number, now: () => number }) {
    this.#conn = conn
    this.#opts = opts
  }

  async indexUncertain (runId: string, operationIds: readonly string[]): Promise<void> {
    if (operationIds.length === 0) return
    const conn = this.#conn
    await conn.eval(INDEX_UNCERTAIN, [conn.key('run', runId), conn.key('idx', 'uncertain')],
      [this.#opts.now(), this.#opts.runTtlMs, conn.key('uop', ''), runId, ...operationIds])
  }

  async unindexUncertain (operationId: string): Promise<void> {
    const conn = this.#conn
    await conn.eval(UNINDEX_UNCERTAIN, [conn.key('uop', operationId), conn.key('idx', 'uncertain'), conn.key('ures', operationId)],
      [operationId, conn.key('run', ''), this.#opts.receiptRetentionMs])
  }

  async runOfUncertain (operationId: string): Promise<string | undefined> {
    const conn = this.#conn
    const runId = await conn.eval(RUN_OF_UNCERTAIN, [conn.key('uop', operationId), conn.key('ures', operationId)], [conn.key('run', '')])
    return typeof runId === 'string' ? runId : undefined
  }

  async countUncertain (): Promise<number> {
    return Number(await this.#conn.eval(COUNT_UNCERTAIN, [this.#conn.key('idx', 'uncertain')], [this.#opts.now()]))
  }

  async tryLock (name: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.#conn.eval(TRY_LOCK, [this.#conn.key('lock', name)], [owner, Math.max(1, Math.ceil(ttlMs))])) === 1
  }

  async unlock (name: string, owner: string): Promise<void> {
    await this.#conn.eval(UNLOCK, [this.#conn.key('lock', name)], [owner])
  }
}
