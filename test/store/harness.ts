/**
 * The stores the contract tests run against: the memory store on a fake
 * clock, and the Redis store on TOOLGATE_TEST_REDIS_URL (real time, a unique
 * key prefix per store, cleaned up on teardown).
 */
import { randomUUID } from 'node:crypto'
import { type Server, type Socket, connect, createServer } from 'node:net'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import type { Receipt } from '../../src/model/receipt.js'
import type { RunRecord } from '../../src/model/run.js'
import { newRunRecord } from '../../src/runs/record.js'
import { resolveRunOptions } from '../../src/runs/options.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RedisStore } from '../../src/store/redis.js'
import { FakeClock } from '../clock.js'
import type { Store } from '../../src/store/types.js'

type Tap = { teardown: (fn: () => unknown) => void }

export const REDIS_URL = process.env.TOOLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

export interface Bounds { runTtlMs: number, maxRuns: number, receiptRetentionMs: number, maxRunsPerTenant?: number, maxWaitingPerTenant?: number, maxUncertainPerTenant?: number }

/** One store under test, a second client of the same data, and its clock. */
export interface Opened {
  store: Store
  /** Another client of the same data: for Redis another connection (another replica), for memory the same store. */
  peer: Store
  now: () => number
  /** Lets time pass: the fake clock jumps, or real time is slept. */
  advance: (ms: number) => Promise<void>
  /** Resolves once `onCancel` listeners of `store` can hear other clients. */
  subscribed: () => Promise<void>
}

export interface Harness {
  name: 'memory' | 'redis'
  /**
   * Durations for expiry cases: short for real time, but with room for a slow
   * machine. A case that checks something is still there checks it some round
   * trips after it set it up, so `short` is also the margin those round trips
   * have on Redis (400 ms was too little with two suites on 2 cores: a lock
   * lapsed between four commands).
   */
  ttl: { short: number, long: number }
  open: (t: Tap, bounds?: Partial<Bounds>) => Promise<Opened>
}

const DEFAULTS: Bounds = { runTtlMs: 60_000, maxRuns: 1000, receiptRetentionMs: 60_000 }

export const memoryHarness: Harness = {
  name: 'memory',
  ttl: { short: 1000, long: 1000 },
  async open (t, bounds = {}) {
    const clock = new FakeClock(1_800_000_000_000)
    const store = new MemoryStore({ ...DEFAULTS, ...bounds, maxReceipts: 10_000, clock, sweepIntervalMs: 0 })
    t.teardown(() => store.close())
    return { store, peer: store, now: () => clock.now(), advance: async (ms) => { clock.advance(ms) }, subscribed: async () => {} }
  }
}

export const redisHarness: Harness = {
  name: 'redis',
  ttl: { short: 1000, long: 2500 },
  async open (t, bounds = {}) {
    const prefix = `toolgate-test:${randomUUID()}:`
    const make = (): RedisStore => new RedisStore({ url: REDIS_URL, prefix, ...DEFAULTS, ...bounds })
    const store = make()
    const peer = make()
    t.teardown(async () => {
      await store.close()
      await peer.close()
      await deleteByPrefix(prefix)
    })
    return {
      store,
      peer,
      now: Date.now,
      advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      subscribed: () => store.whenSubscribed()
    }
  }
}

/**
 * Runs one contract's suite against the memory store and the Redis store
 * alike; the Redis run is skipped, saying why, when no Redis answers at
 * TOOLGATE_TEST_REDIS_URL (default redis://127.0.0.1:6379).
 */
export async function againstEveryStore (contract: string, suite: (t: Test, h: Harness) => Promise<void>): Promise<void> {
  const noRedis = await redisUnavailable()
  if (noRedis !== undefined) t.comment(`Redis ${contract} skipped: ${noRedis}`)
  for (const h of [memoryHarness, redisHarness]) {
    const skip = h.name === 'redis' && noRedis !== undefined ? noRedis : false
    t.test(`the ${h.name} store`, { skip }, async (t) => suite(t, h))
  }
}

/**
 * The config of an app under test on `store`, listening on loopback: on
 * Redis, under a key prefix of its own, whose keys are deleted on teardown.
 */
export function appStoreConfig (t: Tap, store: 'memory' | 'redis'): Record<string, unknown> {
  const config: Record<string, unknown> = { host: '127.0.0.1' }
  if (store === 'redis') {
    const prefix = `toolgate-test:${randomUUID()}:`
    t.teardown(() => deleteByPrefix(prefix))
    config.store = `${REDIS_URL}/?prefix=${encodeURIComponent(prefix)}`
  }
  return config
}

/** Undefined when a Redis answers at the URL, else why not (the reason tests are skipped). */
export async function redisUnavailable (url = REDIS_URL): Promise<string | undefined> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.ping()
    return undefined
  } catch (err) {
    return `no Redis answers at ${url} (${(err as Error).message}); set TOOLGATE_TEST_REDIS_URL or start redis-server (.ci/run does)`
  } finally {
    client.disconnect()
  }
}

/** Deletes every key under a test's prefix. */
export async function deleteByPrefix (prefix: string, url = REDIS_URL): Promise<void> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 })
  try {
    let cursor = '0'
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
      if (keys.length > 0) await client.del(...keys)
      cursor = next
    } while (cursor !== '0')
  } finally {
    client.disconnect()
  }
}

/** A fresh active run record. */
export function makeRun (runId: string, now: number, over: Partial<RunRecord> = {}): RunRecord {
  return { ...newRunRecord(runId, 'acme', resolveRunOptions({}, 8), now), ...over }
}

/** A committed receipt of a run. */
export function makeReceipt (runId: string, operationId: string, over: Partial<Receipt> = {}): Receipt {
  const at = new Date(0).toISOString()
  return {
    operationId,
    runId,
    batchId: 'b1',
    callId: `call_${operationId}`,
    tool: 'build',
    intent: { action: 'build', arguments: { x: 1 } },
    status: 'committed',
    result: { label: 'Wall' },
    stateRevision: 1,
    timeline: [{ event: 'prepared', at }, { event: 'dispatched', at }, { event: 'responded', at }],
    dispatch: { disposition: 'dispatched', attempts: 1 },
    timing: { dispatchedAt: at, completedAt: at, durationMs: 1 },
    ...over
  }
}

/** How the test proxy to Redis treats connections (see `redisProxy`). */
export type ProxyMode = 'open' | 'hold' | 'swallow' | 'refuse'

/** The test proxy to Redis (see `redisProxy`). */
export interface RedisProxy {
  port: number
  mode: (m: ProxyMode) => void
  /** Ends every connection. */
  drop: () => void
  /** Each chunk a client wrote, as forwarded to Redis, in latin1 text. */
  chunks: string[]
  /** Holds Redis' replies (true), or lets them through, the held ones first (false). */
  holdReplies: (on: boolean) => void
}

/**
 * A TCP proxy to the test Redis, closed on teardown. `open` forwards;
 * `hold` keeps new connections waiting, their bytes buffered, until the mode
 * is `open` again; `swallow` forwards nothing the client sends (a command in
 * flight is never answered); `refuse` ends new connections at once. `drop`
 * ends every connection. It notes each chunk it forwards to Redis, and can
 * hold Redis' replies.
 */
export async function redisProxy (t: Tap): Promise<RedisProxy> {
  const target = new URL(REDIS_URL)
  const sockets = new Set<Socket>()
  const held: Array<() => void> = []
  const chunks: string[] = []
  const heldReplies: Array<() => void> = []
  let holdingReplies = false
  let mode: ProxyMode = 'open'
  const server: Server = createServer((client) => {
    if (mode === 'refuse') {
      client.destroy()
      return
    }
    sockets.add(client)
    client.on('error', () => {})
    client.on('close', () => sockets.delete(client))
    const buffered: Buffer[] = []
    const buffer = (chunk: Buffer): void => { buffered.push(chunk) }
    client.on('data', buffer)
    const through = (): void => {
      if (client.destroyed) return
      const upstream = connect(Number(target.port || 6379), target.hostname)
      sockets.add(upstream)
      upstream.on('error', () => {})
      upstream.on('close', () => { sockets.delete(upstream); client.destroy() })
      client.on('close', () => upstream.destroy())
      client.off('data', buffer)
      const forward = (chunk: Buffer): void => {
        chunks.push(chunk.toString('latin1'))
        upstream.write(chunk)
      }
      for (const chunk of buffered) forward(chunk)
      client.on('data', (chunk: Buffer) => { if (mode !== 'swallow') forward(chunk) })
      upstream.on('data', (chunk: Buffer) => {
        if (holdingReplies) heldReplies.push(() => client.write(chunk))
        else client.write(chunk)
      })
    }
    if (mode === 'hold') held.push(through)
    else through()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const s of sockets) s.destroy(); server.close(() => resolve()) }))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port')
  return {
    port: address.port,
    mode: (m: ProxyMode) => {
      mode = m
      if (m === 'open') for (const go of held.splice(0)) go()
    },
    drop: () => { for (const s of sockets) s.destroy() },
    chunks,
    holdReplies: (on: boolean) => {
      holdingReplies = on
      if (!on) for (const go of heldReplies.splice(0)) go()
    }
  }
}
