import type { RedisConnection } from './redis-connection.js'
import { COUNT_UNCERTAIN, INDEX_UNCERTAIN, TRY_LOCK, UNINDEX_UNCERTAIN, UNLOCK } from './redis-uncertain-scripts.js'
import type { UncertainWrites } from './uncertain-writes.js'

/**
 * The uncertain-write index and recovery locks in Redis (`P uop:<operationId>`,
 * `P idx:uncertain`, `P lock:<name>`). An entry is kept as long as its run's
 * key in the same Redis, read when it is noted.
 */
export class RedisUncertainWrites implements UncertainWrites {
  readonly #conn: RedisConnection
  readonly #opts: { runTtlMs: number, now: () => number }

  constructor (conn: RedisConnection, opts: { runTtlMs: number, now: () => number }) {
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
    await this.#conn.eval(UNINDEX_UNCERTAIN, [this.#conn.key('uop', operationId), this.#conn.key('idx', 'uncertain')], [operationId])
  }

  async runOfUncertain (operationId: string): Promise<string | undefined> {
    return (await this.#conn.call(() => this.#conn.redis.get(this.#conn.key('uop', operationId)))) ?? undefined
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
