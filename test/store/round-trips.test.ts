/**
 * Round trips to Redis per batch, counted by the store's client wrapper
 * (issue #28): the load-independent half of the Redis store's speed. A
 * batch of reads takes the lease and admits in one round trip, and stores
 * its answer and releases the lease in another; a larger batch may take one
 * more, and every action call adds one per receipt write.
 */
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { Redis } from 'ioredis'
import { RedisStore } from '../../src/store/redis.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { REDIS_URL } from './harness.js'

const ex = await startExecutor(t)
ex.on('build', () => ({ status: 'committed', result: { built: true }, stateRevision: 1 }))
const prefix = `toolgate-test:${randomUUID()}:`
const store = new RedisStore({ url: REDIS_URL, prefix, runTtlMs: 60_000, maxRuns: 1000, receiptRetentionMs: 60_000 })
t.teardown(async () => {
  const redis = new Redis(REDIS_URL)
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    if (keys.length > 0) await redis.del(...keys)
    cursor = next
  } while (cursor !== '0')
  await redis.quit()
})
const { app } = await buildTestApp(t, {
  store,
  approvalSweepMs: 0,
  tools: [tool('look', ex.url, { readOnly: true }), tool('build', ex.url, { conflictKey: 'tile:{/x}', action: {} })]
})

const look = (n: number, i = 0): unknown => ({ id: `c${i}`, name: 'look', arguments: { x: n, y: i } })

/** Round trips and commands one batch took, and its answer. */
async function counted (runId: string, batchId: string, calls: unknown[]): Promise<{ roundTrips: number, commands: number, status: number, body: any }> {
  const before = store.traffic()
  const res = await post(app, `/v1/runs/${runId}/batches`, { batchId, calls })
  const after = store.traffic()
  return { roundTrips: after.roundTrips - before.roundTrips, commands: after.commands - before.commands, status: res.status, body: res.body }
}

async function newRun (options: Record<string, unknown> = {}): Promise<string> {
  const res = await post(app, '/v1/runs', { maxConcurrentTools: 10, ...options })
  t.equal(res.status, 201)
  return res.body.runId as string
}

t.test('a 1-call batch of a read takes at most 2 round trips, its first included', async (t) => {
  const runId = await newRun()
  for (let n = 1; n <= 4; n++) {
    const b = await counted(runId, `b${n}`, [look(n)])
    t.equal(b.status, 200)
    t.equal(b.body.results[0].status, 'ok')
    t.comment(`1-call batch ${n}: ${b.roundTrips} round trips, ${b.commands} commands`)
    t.ok(b.roundTrips <= 2, `batch ${n}: ${b.roundTrips} round trips (at most 2)`)
  }
})

t.test('a 10-call batch of reads takes at most 3 round trips', async (t) => {
  const runId = await newRun()
  for (let n = 1; n <= 3; n++) {
    const b = await counted(runId, `b${n}`, Array.from({ length: 10 }, (_, i) => look(n, i)))
    t.equal(b.status, 200)
    t.strictSame(b.body.results.map((r: { status: string }) => r.status), Array(10).fill('ok'))
    t.comment(`10-call batch ${n}: ${b.roundTrips} round trips, ${b.commands} commands`)
    t.ok(b.roundTrips <= 3, `batch ${n}: ${b.roundTrips} round trips (at most 3)`)
  }
})

t.test('action calls add at most one round trip per receipt write (pending, then final) and one per epoch of writes (the write-ahead record)', async (t) => {
  const runId = await newRun()
  for (let n = 1; n <= 3; n++) {
    const calls = [look(n, 0), { id: 'w1', name: 'build', arguments: { x: n, y: 1 } }, { id: 'w2', name: 'build', arguments: { x: n + 100, y: 2 } }]
    const b = await counted(runId, `b${n}`, calls)
    t.equal(b.status, 200)
    t.strictSame(b.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok'])
    const receiptWrites = 2 * 2
    // The write-ahead record: one round trip per epoch that holds writes, whatever their number.
    const writeEpochs = new Set(b.body.results.slice(1).map((r: { details: { epoch: number } }) => r.details.epoch)).size
    t.comment(`3-call batch with 2 actions ${n}: ${b.roundTrips} round trips, ${b.commands} commands, writes in ${writeEpochs} epoch(s)`)
    t.ok(b.roundTrips <= 3 + receiptWrites + writeEpochs, `batch ${n}: ${b.roundTrips} round trips (at most 3 + ${receiptWrites} + ${writeEpochs})`)
  }
})

t.test('a resend of a finished batch is answered from the store in at most 3 round trips', async (t) => {
  const runId = await newRun()
  const first = await counted(runId, 'b1', [look(1)])
  const again = await counted(runId, 'b1', [look(1)])
  t.equal(again.status, 200)
  t.strictSame(again.body, first.body, 'the stored answer')
  // The lease step finds the batch id known (assumed new, so it is read again from what Redis answered), then the stored answer.
  t.comment(`resend: ${again.roundTrips} round trips, ${again.commands} commands`)
  t.ok(again.roundTrips <= 3, `${again.roundTrips} round trips`)
})
