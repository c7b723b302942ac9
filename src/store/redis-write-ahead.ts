import { type RunIdentity, isIncarnation } from '../model/incarnation.js'
import { randomUUID } from 'node:crypto'
import type { Uncertainty } from '../model/uncertainty.js'
import type { RedisConnection } from './redis-connection.js'
import { decodeStored, hotJsonOf, joinRun } from './redis-run-form.js'
import { RECORD_WRITES, TAKE_OVER } from './redis-write-ahead-scripts.js'
import { StoreUnavailableError } from './records.js'
import { type LeaseHolder, type PendingWrite, type WriteAhead, takeOver } from './write-ahead.js'

/** Compare-and-set attempts of one take-over before it gives up (503). */
const MAX_TAKE_OVER_ATTEMPTS = 20

/**
 * Write-ahead records in Redis (key in redis-write-ahead-scripts.ts): one
 * script records an epoch's writes under the batch's lease; the run state's
 * UPDATE_RUN deletes them with a stored answer; a take-over reads the run
 * and its records at once, then writes the record with their uncertainties
 * in one compare-and-set script, which fails (and is tried again) if the
 * run or its records changed in between.
 */
export class RedisWriteAhead implements WriteAhead {
  readonly #conn: RedisConnection
  readonly #opts: { runTtlMs: number, now: () => number }

  constructor (conn: RedisConnection, opts: { runTtlMs: number, now: () => number }) {
    this.#conn = conn
    this.#opts = opts
  }

  async recordWrites (run: RunIdentity, lease: LeaseHolder, writes: readonly PendingWrite[]): Promise<boolean> {
    const conn = this.#conn
    const pairs: string[] = []
    for (const w of writes) pairs.push(w.operationId, JSON.stringify(w))
    const done = await conn.eval(RECORD_WRITES, [conn.key('run', run.runId), conn.writeAheadKey(run)],
      [lease.owner, lease.batchId, this.#opts.now(), String(run.createdAt), run.tenant, this.#opts.runTtlMs, ...pairs])
    return done === 1
  }

  async pendingWrites (run: RunIdentity): Promise<PendingWrite[]> {
    const conn = this.#conn
    const values = await conn.call(() => conn.redis.hvals(conn.writeAheadKey(run)))
    return values.map((json) => JSON.parse(json) as PendingWrite)
  }

  async takeOverWrites (run: RunIdentity): Promise<Uncertainty[] | undefined> {
    const conn = this.#conn
    const runKey = conn.key('run', run.runId)
    const walKey = conn.writeAheadKey(run)
    for (let attempt = 1; attempt <= MAX_TAKE_OVER_ATTEMPTS; attempt++) {
      const [fields, recorded] = await conn.call(async () => {
        const replies = await conn.redis.multi().hmget(runKey, 'v', 'h', 'c', 'r').hvals(walKey).exec()
        if (replies === null) throw new Error('the read of the run was aborted')
        for (const [err] of replies) if (err !== null) throw err
        return replies.map(([, reply]) => reply) as [Array<string | null>, string[]]
      }, 2)
      const [version, hot, cold, whole] = fields
      const stored = version == null ? undefined : decodeStored(hot, cold, whole)
      if (stored === undefined) return undefined
      const record = joinRun(stored)
      if (!isIncarnation(record, run)) return undefined
      const writes = recorded.map((w) => JSON.parse(w) as PendingWrite)
      const leased = record.inFlight !== null
      const now = this.#opts.now()
      const made = takeOver(record, writes, now)
      if (made === undefined) return undefined
      // Nothing recorded and no lapsed lease: nothing to write.
      if (!leased && writes.length === 0) return made
      const written = await conn.eval(TAKE_OVER, [runKey, walKey, conn.key('idx', 'leased'), conn.key('idx', 'uncertain')],
        [version!, `wal.${randomUUID()}`, hotJsonOf(record), writes.length, run.runId, now, this.#opts.runTtlMs, conn.key('uop', ''),
          stored.coldStored ? '' : stored.coldJson, ...made.map((u) => u.operationId)])
      if (written === 1) return made
      if (written === 0) return undefined
    }
    throw new StoreUnavailableError(`Run ${run.runId} changed ${MAX_TAKE_OVER_ATTEMPTS} times while this replica took it over`)
  }
}
