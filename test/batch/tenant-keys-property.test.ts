/**
 * The cross-run property of tenant-scoped conflict keys (SPEC section 17),
 * with fast-check: random schedules of several runs of one tenant sending
 * batches whose calls share a few tenant keys, against a real HTTP executor
 * on port 0 that records, per key, the calls in progress and the fencing
 * tokens it was sent. Whatever the schedule: no two calls with the same key
 * are ever at the executor at once, and each key's tokens strictly increase
 * in the order the executor sees them. On the memory store, and on Redis
 * with the runs spread over two replicas (two apps on one key prefix).
 */
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { REDIS_URL, deleteByPrefix, redisUnavailable } from '../store/harness.js'

const KEYS = ['a', 'b', 'c']

interface Seen { overlaps: number, regressions: number, calls: number, byKey: Map<string, { active: number, last: bigint }> }

async function replicas (t: Tap, count: number, store: string | undefined): Promise<{ apps: Array<Awaited<ReturnType<typeof buildTestApp>>['app']>, seen: Seen }> {
  const ex = await startExecutor(t)
  const seen: Seen = { overlaps: 0, regressions: 0, calls: 0, byKey: new Map() }
  for (const name of ['edit', 'peek']) {
    ex.on(name, async (call, req) => {
      const key = String(call.arguments.k)
      const token = BigInt(String(req.headers['toolgate-fencing-token']))
      let k = seen.byKey.get(key)
      if (k === undefined) seen.byKey.set(key, k = { active: 0, last: 0n })
      seen.calls++
      if (k.active > 0) seen.overlaps++
      if (token <= k.last) seen.regressions++
      k.last = token
      k.active++
      await new Promise((resolve) => setTimeout(resolve, Number(call.arguments.ms)))
      k.active--
      return { content: 'done' }
    })
  }
  const tools = [
    tool('edit', ex.url, { conflictKey: 'file:{/k}', conflictScope: 'tenant', inputSchema: { type: 'object', properties: { k: { type: 'string' }, ms: { type: 'integer' } } } }),
    tool('peek', ex.url, { conflictKey: 'file:{/k}', conflictScope: 'tenant', readOnly: true, inputSchema: { type: 'object', properties: { k: { type: 'string' }, ms: { type: 'integer' } } } })
  ]
  const apps = []
  for (let i = 0; i < count; i++) apps.push((await buildTestApp(t, { tools, ...(store === undefined ? {} : { config: { store } }) })).app)
  return { apps, seen }
}

type Tap = Test

/** One run's script: its batches, each a list of calls (tool, key, executor time). */
const schedule = fc.array(
  fc.array(fc.array(fc.record({ read: fc.boolean(), key: fc.constantFrom(...KEYS), ms: fc.integer({ min: 0, max: 6 }) }), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 3 }),
  { minLength: 2, maxLength: 4 })

async function check (t: Tap, store: string | undefined, replicaCount: number): Promise<void> {
  const { apps, seen } = await replicas(t, replicaCount, store)
  let schedules = 0
  let calls = 0
  await fc.assert(fc.asyncProperty(schedule, async (runs) => {
    schedules++
    await Promise.all(runs.map(async (batches, r) => {
      const app = apps[r % apps.length]!
      const run = await post(app, '/v1/runs', { toolExecution: 'parallel' })
      for (const batch of batches) {
        const res = await post(app, `/v1/runs/${run.body.runId}/batches`, {
          calls: batch.map((c, i) => ({ id: `c${i}`, name: c.read ? 'peek' : 'edit', arguments: { k: c.key, ms: c.ms } }))
        })
        calls += batch.length
        // Every call settles once, and each of them ran: the wait is long enough for every schedule.
        if (res.body.results.some((x: { status: string }) => x.status !== 'ok')) throw new Error(`a call did not run: ${JSON.stringify(res.body.results)}`)
      }
    }))
    return seen.overlaps === 0 && seen.regressions === 0
  }), { numRuns: 12, seed: 4040 })
  t.equal(seen.overlaps, 0, 'no two same-key calls at the executor at once')
  t.equal(seen.regressions, 0, "each key's fencing tokens strictly increase")
  t.equal(seen.calls, calls, 'every call reached the executor once')
  t.comment(`${schedules} schedules, ${calls} calls over ${replicaCount} replica(s)`)
}

// Asked before any test loads the machine: its connect timeout is short.
const noRedis = await redisUnavailable()

t.test('memory store: random schedules of several runs never overlap same-key calls, and tokens increase per key', async (t) => {
  await check(t, undefined, 1)
})

t.test('Redis store, two replicas: the same holds across replicas', { skip: noRedis ?? false }, async (t) => {
  const prefix = `toolgate-test:${randomUUID()}:`
  t.teardown(() => deleteByPrefix(prefix))
  await check(t, `${REDIS_URL}/?prefix=${encodeURIComponent(prefix)}`, 2)
})
