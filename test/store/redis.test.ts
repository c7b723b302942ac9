/**
 * What only the Redis store has: its URL, its TTLs as Redis holds them, and
 * its failures when Redis cannot be reached.
 */
import { freePort } from '../helper.js'
import { randomUUID } from 'node:crypto'
import { connect } from 'node:net'
import t from 'tap'
import { Redis } from 'ioredis'
import { defaultConfig } from '../../src/config.js'
import { createStore } from '../../src/store/create.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RedisStore, parseStoreUrl } from '../../src/store/redis.js'
import { StoreUnavailableError } from '../../src/store/types.js'
import { REDIS_URL, deleteByPrefix, makeReceipt, makeRun, redisUnavailable } from './harness.js'

const noRedis = await redisUnavailable()
if (noRedis !== undefined) t.comment(`Redis cases skipped: ${noRedis}`)

/**
 * A store under a key prefix of its own and a plain client beside it, to look
 * at the keys as Redis holds them; both closed and the prefix deleted after the test.
 */
function openStore (t: { teardown: (fn: () => unknown) => void }, ttls: { runTtlMs?: number, receiptRetentionMs?: number } = {}): { prefix: string, store: RedisStore, raw: Redis } {
  const prefix = `toolgate-test:${randomUUID()}:`
  const store = new RedisStore({ url: REDIS_URL, prefix, runTtlMs: ttls.runTtlMs ?? 60_000, maxRuns: 100, receiptRetentionMs: ttls.receiptRetentionMs ?? 1000 })
  const raw = new Redis(REDIS_URL)
  t.teardown(async () => {
    await store.close()
    raw.disconnect()
    await deleteByPrefix(prefix)
  })
  return { prefix, store, raw }
}

t.test('the store URL gives the connection and the key prefix', async (t) => {
  t.same(parseStoreUrl('redis://127.0.0.1:6379/2?prefix=blue:'), { connection: 'redis://127.0.0.1:6379/2', prefix: 'blue:' })
  t.same(parseStoreUrl('rediss://:secret@cache:6380'), { connection: 'rediss://:secret@cache:6380', prefix: 'toolgate:' })
  t.throws(() => parseStoreUrl('http://127.0.0.1:6379'), /redis:\/\/ or rediss:\/\/ URL, got http:/)
  t.throws(() => new RedisStore({ url: 'redis://127.0.0.1:6379?prefix=', runTtlMs: 1000, maxRuns: 1, receiptRetentionMs: 0 }), /non-empty/)
  t.throws(() => new RedisStore({ url: 'redis://127.0.0.1:6379', runTtlMs: 0, maxRuns: 1, receiptRetentionMs: 0 }), /`runTtlMs`.*got 0/)
})

t.test('TOOLGATE_STORE picks the store: memory by default, Redis for a redis:// URL', async (t) => {
  const memory = createStore(defaultConfig())
  t.ok(memory instanceof MemoryStore)
  await memory.close()
  const redis = createStore(defaultConfig({ store: `${REDIS_URL}?prefix=picked:` }))
  t.ok(redis instanceof RedisStore)
  t.equal((redis as RedisStore).prefix, 'picked:')
  await redis.close()
})

t.test('an unreachable Redis makes every operation fail with StoreUnavailableError, and the store not ready', async (t) => {
  const port = await freePort()
  const store = new RedisStore({ url: `redis://127.0.0.1:${port}`, runTtlMs: 60_000, maxRuns: 10, receiptRetentionMs: 1000, commandTimeoutMs: 2000 })
  t.teardown(() => store.close())
  t.equal(await store.ready(), false)
  const failure = await store.createRun(makeRun('r1', Date.now())).catch((err: unknown) => err)
  t.ok(failure instanceof StoreUnavailableError)
  t.equal((failure as StoreUnavailableError).statusCode, 503, 'answered as 503 overloaded by the HTTP error handler')
  await t.rejects(store.updateRun('r1', () => 1), StoreUnavailableError)
  await t.rejects(store.getReceipt('op_1'), StoreUnavailableError)
  await t.rejects(store.publishCancel('r1', 'cancelled'), StoreUnavailableError)
})

t.test('Redis holds each key as long as the memory store would keep its data', { skip: noRedis ?? false }, async (t) => {
  const runTtlMs = 60_000
  const receiptRetentionMs = 30_000
  const { prefix, store, raw } = openStore(t, { runTtlMs, receiptRetentionMs })
  const now = Date.now()
  await store.createRun(makeRun('r1', now))
  const runTtl = await raw.pttl(`${prefix}run:r1`)
  t.ok(runTtl > runTtlMs - 5000 && runTtl <= runTtlMs, `an idle run lives runTtl (${runTtl} ms)`)

  await store.putReceipt(makeReceipt('r1', 'op_1'), 'acme')
  const receiptTtl = await raw.pttl(`${prefix}op:op_1`)
  t.ok(receiptTtl >= runTtl + receiptRetentionMs - 5000, `a receipt lives its run's time and the retention (${receiptTtl} ms)`)
  t.ok(await raw.pttl(`${prefix}journal:r1`) >= receiptTtl - 5000, 'and so does the run journal')

  await store.updateRunWithBatchId('r1', 'b1', (run, entry) => {
    entry.requestHash = 'h'
    run.inFlight = { batchId: 'b1', owner: 'x', leaseExpiresAt: Date.now() + 10 * runTtlMs }
  })
  const leasedTtl = await raw.pttl(`${prefix}run:r1`)
  t.ok(leasedTtl > 9 * runTtlMs, `a leased run lives at least until its lease expires (${leasedTtl} ms)`)
  t.ok(await raw.pttl(`${prefix}op:op_1`) >= leasedTtl + receiptRetentionMs, 'its receipts are pushed on with it')

  t.equal(await store.completeBatch('r1', 'x', { batchId: 'b1', requestHash: 'h', responseJson: '{}', completedAt: Date.now() }), true)
  const batchTtl = await raw.pttl(`${prefix}batches:r1`)
  t.ok(Math.abs(batchTtl - await raw.pttl(`${prefix}run:r1`)) < 5000, 'batch records live exactly as long as their run')
  const batchIdTtl = await raw.pttl(`${prefix}batchids:r1`)
  t.ok(Math.abs(batchIdTtl - await raw.pttl(`${prefix}run:r1`)) < 5000, `and so do batch ids (${batchIdTtl} ms)`)

  t.equal(await raw.zscore(`${prefix}idx:leased`, 'r1'), null, 'completing the leased batch takes the run out of the lease index')
  const runTtlAfter = await raw.pttl(`${prefix}run:r1`)
  t.ok(runTtlAfter <= runTtlMs, `and the run is back to the idle TTL (${runTtlAfter} ms)`)

  const keys = (await raw.keys(`${prefix}*`)).map((k) => k.slice(prefix.length)).sort()
  t.same(keys, ['batches:r1', 'batchids:r1', 'idx:active', 'idx:runs', 'journal:r1', 'op:op_1', 'run:r1', 'tenant:acme'], 'every key is under the prefix')

  await store.endRun('r1', Date.now())
  t.same(await raw.exists(`${prefix}batchids:r1`, `${prefix}batches:r1`), 0, 'ending the run deletes its batch ids and records')
})

t.test('a run record stays the same size however many batches the run had: batch ids are kept beside it', { skip: noRedis ?? false }, async (t) => {
  const { prefix, store, raw } = openStore(t)
  await store.createRun(makeRun('r1', Date.now()))
  // What the engine does with a batch's id: record it as it takes the lease, then store the answer and release.
  const batch = async (i: number): Promise<void> => {
    const batchId = `batch_${String(i).padStart(4, '0')}`
    await store.updateRunWithBatchId('r1', batchId, (run, entry) => {
      entry.requestHash = `hash_${batchId}`
      run.inFlight = { batchId, owner: 'x', leaseExpiresAt: Date.now() + 30_000 }
    })
    await store.completeBatch('r1', 'x', { batchId, requestHash: `hash_${batchId}`, responseJson: '{}', completedAt: Date.now() })
  }
  const recordBytes = async (): Promise<number> => Buffer.byteLength((await raw.hget(`${prefix}run:r1`, 'h'))!) + Buffer.byteLength((await raw.hget(`${prefix}run:r1`, 'c'))!)
  await batch(0)
  const afterOne = await recordBytes()
  for (let i = 1; i < 200; i++) await batch(i)
  t.equal(await recordBytes(), afterOne, `${afterOne} B after 1 batch and after 200`)
  t.equal(await raw.hlen(`${prefix}batchids:r1`), 200, 'the 200 batch ids are in their own hash')
  t.same(await store.updateRunWithBatchId('r1', 'batch_0123', (_run, entry) => entry.requestHash), { found: true, value: 'hash_batch_0123' }, 'and each reads back')
})

t.test('a run last written here is updated without reading it first, and no write of another replica in between is lost', { skip: noRedis ?? false }, async (t) => {
  const prefix = `toolgate-test:${randomUUID()}:`
  const options = { url: REDIS_URL, prefix, runTtlMs: 60_000, maxRuns: 100, receiptRetentionMs: 1000 }
  // One attempt only: an update that started from an out-of-date copy must still get through, without counting it.
  const a = new RedisStore({ ...options, maxUpdateAttempts: 1 })
  const b = new RedisStore(options)
  const raw = new Redis(REDIS_URL)
  const monitor = await monitorRedis()
  t.teardown(async () => {
    await a.close()
    await b.close()
    raw.disconnect()
    monitor.close()
    await deleteByPrefix(prefix)
  })
  // Reads of the run record by the store's client, as Redis saw them; an ECHO seen by the monitor says it has caught up.
  const readsSoFar = async (): Promise<number> => {
    const mark = `${prefix}mark:${randomUUID()}`
    await raw.echo(mark)
    await monitor.seen(mark)
    // A script's own commands (shown as from `lua`) are not a read of the client's.
    return monitor.lines.filter((l) => !l.includes(' lua]') && l.toLowerCase().includes(`"hmget" "${prefix}run:r1"`.toLowerCase())).length
  }

  await a.createRun(makeRun('r1', Date.now()))
  await a.updateRunWithBatchId('r1', 'b1', (run, entry) => {
    entry.requestHash = 'h1'
    run.inFlight = { batchId: 'b1', owner: 'a', leaseExpiresAt: Date.now() + 30_000 }
  })
  const afterBegin = await readsSoFar()
  t.equal(afterBegin, 0, 'the run created here is not read, nor the new batch id (the write checks both)')
  await a.updateRun('r1', (run) => { run.counters.toolCalls = 1 })
  await a.updateRun('r1', (run) => { run.counters.toolCalls++ })
  t.equal(await readsSoFar(), afterBegin, 'two more updates of the leased run, and no read')

  await b.updateRun('r1', (run) => { run.counters.totalTokens = 7 })
  const seen = await a.updateRun('r1', (run) => {
    run.counters.toolCalls++
    return run.counters.totalTokens
  })
  t.same(seen, { found: true, value: 7 }, 'the update from an out-of-date copy ran again on the other replica\'s write')
  const run = await a.getRun('r1')
  t.equal(run?.counters.totalTokens, 7, 'the other replica\'s write is kept')
  t.equal(run?.counters.toolCalls, 3, 'and so is every update of this one')

  t.equal(await a.completeBatch('r1', 'a', { batchId: 'b1', requestHash: 'h1', responseJson: '{}', completedAt: Date.now() }), true, 'the batch completes')
  const released = await readsSoFar()
  await a.updateRun('r1', (r) => { r.counters.toolCalls++ })
  t.equal(await readsSoFar(), released, 'nor is a run with no lease, once written here')
  const resent = await a.updateRunWithBatchId('r1', 'b1', (_run, entry) => entry.requestHash)
  t.same(resent, { found: true, value: 'h1' }, 'a batch id assumed new but known is answered by the write, and the update runs again')
  t.equal(await readsSoFar(), released, 'still without a read')
})

t.test('a run gone and created again under its id is never taken for the one last written here', { skip: noRedis ?? false }, async (t) => {
  const prefix = `toolgate-test:${randomUUID()}:`
  const options = { url: REDIS_URL, prefix, runTtlMs: 60_000, maxRuns: 100, receiptRetentionMs: 1000 }
  const a = new RedisStore(options)
  const b = new RedisStore(options)
  const raw = new Redis(REDIS_URL)
  t.teardown(async () => {
    await a.close()
    await b.close()
    raw.disconnect()
    await deleteByPrefix(prefix)
  })
  await a.createRun(makeRun('r1', Date.now()))
  await a.updateRun('r1', (run) => { run.counters.turns = 5 })
  // As if it expired: the key goes, and another replica creates a run of the same id, written as often.
  await raw.del(`${prefix}run:r1`)
  await b.createRun(makeRun('r1', Date.now()))
  await b.updateRun('r1', (run) => { run.terminationReason = 'timeout' })
  const seen = await a.updateRun('r1', (run) => [run.counters.turns, run.terminationReason])
  t.same(seen, { found: true, value: [0, 'timeout'] }, 'the update ran on the new run, not on the copy kept here')
})

/** A MONITOR connection of its own (plain RESP, one line per command Redis runs), for counting commands. */
async function monitorRedis (): Promise<{ lines: string[], seen: (text: string) => Promise<void>, close: () => void }> {
  const { hostname, port } = new URL(REDIS_URL)
  const socket = connect(Number(port || 6379), hostname)
  const lines: string[] = []
  const waiting: Array<{ text: string, resolve: () => void }> = []
  let buffered = ''
  let started: () => void = () => {}
  const ok = new Promise<void>((resolve) => { started = resolve })
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    buffered += chunk
    let end: number
    while ((end = buffered.indexOf('\r\n')) >= 0) {
      const line = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      if (line === '+OK') { started(); continue }
      lines.push(line)
      for (const w of waiting.filter((x) => line.includes(x.text))) {
        waiting.splice(waiting.indexOf(w), 1)
        w.resolve()
      }
    }
  })
  socket.write('MONITOR\r\n')
  await ok
  return {
    lines,
    seen: async (text) => {
      if (lines.some((l) => l.includes(text))) return
      await new Promise<void>((resolve) => { waiting.push({ text, resolve }) })
    },
    close: () => { socket.destroy() }
  }
}

t.test('a run written whole by an earlier version (field r) is read, checked by the scripts, and moved to the two-part form by its first write', { skip: noRedis ?? false }, async (t) => {
  const { prefix, store, raw } = openStore(t)
  const key = `${prefix}run:r1`
  const now = Date.now()
  // As the earlier version left a leased run: the whole record in r, beside its version and incarnation.
  await store.createRun(makeRun('r1', now))
  const old = makeRun('r1', now, { inFlight: { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now + 60_000 } })
  old.counters.toolCalls = 5
  await raw.hdel(key, 'h', 'c', 'lo', 'lb', 'le')
  await raw.hset(key, 'v', 'old.1', 'r', JSON.stringify(old))
  // Another store instance: nothing of the run is kept from a write of its own.
  const reader = new RedisStore({ url: REDIS_URL, prefix, runTtlMs: 60_000, maxRuns: 100, receiptRetentionMs: 1000 })
  t.teardown(() => reader.close())

  t.same(await reader.getRun('r1'), old, 'read whole')
  t.same((await reader.listRuns('acme', 10)).runs, [old], 'listed whole')
  const write = { operationId: 'op_1', fingerprint: 'fp', conflictKey: null, callId: 'c1', tool: 'pay', batchId: 'b1', action: false }
  t.equal(await reader.recordWrites(old, { owner: 'replica-a', batchId: 'b1' }, [write]), true, 'its lease is checked from the whole record')
  t.equal(await reader.recordWrites(old, { owner: 'replica-b', batchId: 'b1' }, [write]), false, 'and another owner refused')

  const seen = await reader.updateRun('r1', (run) => run.counters.toolCalls++)
  t.same(seen, { found: true, value: 5 }, 'the first update starts from the whole record')
  t.same(await raw.hmget(key, 'r', 'lo', 'lb'), [null, 'replica-a', 'b1'], 'and writes the two-part form, its lease as fields, without r')
  t.same(JSON.parse((await raw.hget(key, 'c'))!), { runId: 'r1', tenant: 'acme', options: old.options, createdAt: now }, 'the cold part written once')
  const after = await store.getRun('r1')
  t.equal(after?.counters.toolCalls, 6, 'read back by every store')
  t.same(after?.options, old.options)
  t.equal(await store.recordWrites(old, { owner: 'replica-a', batchId: 'b1' }, [write]), true, 'the lease is checked from its fields')
  await store.updateRun('r1', (run) => { run.inFlight = null })
  t.same(await raw.hmget(key, 'lo', 'lb', 'le'), [null, null, null], 'a released lease leaves no fields')
  t.equal(await store.recordWrites(old, { owner: 'replica-a', batchId: 'b1' }, [write]), false, 'and records no write')
})
