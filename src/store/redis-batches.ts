import type { BatchAnswers } from './batch-answers.js'
import { type BatchEntry, type BatchRecord, batchEntry } from './records.js'
import type { RedisConnection } from './redis-connection.js'

/** Batch answers as `RedisRunState` stores them (`P batches:<runId>`, a hash batchId → record JSON). */
export class RedisBatchAnswers implements BatchAnswers {
  readonly #conn: RedisConnection

  constructor (conn: RedisConnection) {
    this.#conn = conn
  }

  async getBatch (runId: string, batchId: string): Promise<BatchRecord | undefined> {
    const json = await this.#conn.call(() => this.#conn.redis.hget(this.#conn.key('batches', runId), batchId))
    return json === null ? undefined : JSON.parse(json) as BatchRecord
  }

  async listBatches (runId: string): Promise<BatchEntry[]> {
    const values = await this.#conn.call(() => this.#conn.redis.hvals(this.#conn.key('batches', runId)))
    return values.map((json) => batchEntry(JSON.parse(json) as BatchRecord))
  }
}
