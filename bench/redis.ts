/**
 * The Redis database the bench runs toolgate's Redis store on: a database of
 * its own (TOOLGATE_BENCH_REDIS, default database 5 on 127.0.0.1), flushed
 * before and after, and the server's CPU time for what each batch costs it.
 */
import { Redis } from 'ioredis'

export const DEFAULT_BENCH_REDIS = 'redis://127.0.0.1:6379/5'

/** The bench's own connection to that database. */
export interface BenchRedis {
  /** The store URL toolgate is given. */
  readonly url: string
  /** CPU time (user + system, µs) the Redis server has used so far: every client's, so a quiet Redis reads truest. */
  serverCpuUs (): Promise<number>
  /** Empties the bench's database (FLUSHDB: that database only). */
  flush (): Promise<void>
  close (): Promise<void>
}

/** Connects, or answers null (with why) when no Redis answers there: the bench then measures the memory store only. */
export async function openBenchRedis (url = process.env.TOOLGATE_BENCH_REDIS ?? DEFAULT_BENCH_REDIS): Promise<BenchRedis | { unavailable: string }> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000, retryStrategy: () => null })
  try {
    await redis.connect()
    await redis.ping()
  } catch (err) {
    redis.disconnect()
    return { unavailable: (err as Error).message }
  }
  return {
    url,
    async serverCpuUs () {
      const info = await redis.info('cpu')
      const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN)
      return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6
    },
    async flush () { await redis.flushdb() },
    async close () { await redis.quit().catch(() => redis.disconnect()) }
  }
}
