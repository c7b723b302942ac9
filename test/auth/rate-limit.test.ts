/**
 * With the Redis store, replicas count a key's requests in the same Redis:
 * two app instances on one Redis share one limit, and another deployment's
 * prefix has its own counters.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import t from 'tap'
import { buildTestApp, get } from '../helper.js'
import { REDIS_URL } from '../store/harness.js'

const KEY = 'shared-limit-key-0123456789ab'
const OTHER = 'other-limit-key-0123456789abc'
const keysDoc = { keys: [{ key: KEY, tenant: 'acme', roles: ['orchestrator', 'operator'] }, { key: OTHER, tenant: 'acme', roles: ['orchestrator', 'operator'] }] }
const auth = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` })

/** A deployment's store URL under a fresh prefix; its keys are deleted on teardown. */
function deployment (t: { teardown: (fn: () => unknown) => void }): { url: string, prefix: string } {
  const prefix = `toolgate-test:${randomUUID()}:`
  t.teardown(async () => {
    const redis = new Redis(REDIS_URL)
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })
  return { url: `${REDIS_URL}/?prefix=${encodeURIComponent(prefix)}`, prefix }
}

t.test('two replicas on one Redis share one limit per key', async (t) => {
  const { url, prefix } = deployment(t)
  const config = { store: url, rateLimitMax: 3, rateLimitWindowMs: 60_000 }
  const { app: a } = await buildTestApp(t, { keysDoc, config })
  const { app: b } = await buildTestApp(t, { keysDoc, config })

  t.equal((await get(a, '/v1/summary', auth(KEY))).status, 200)
  t.equal((await get(b, '/v1/summary', auth(KEY))).status, 200)
  const third = await get(a, '/v1/summary', auth(KEY))
  t.equal(third.status, 200)
  t.equal(third.headers['x-ratelimit-remaining'], '0', 'the third request, on either replica, spends the budget')
  const limited = await get(b, '/v1/summary', auth(KEY))
  t.equal(limited.status, 429, 'the other replica knows the key spent its budget')
  t.equal(limited.body.code, 'rate_limited')
  t.equal((await get(a, '/v1/summary', auth(KEY))).status, 429)
  t.equal((await get(b, '/v1/summary', auth(OTHER))).status, 200, 'another key has its own budget')

  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.quit())
  const counters = await redis.keys(`${prefix}ratelimit:*`)
  t.equal(counters.length, 2, `the counters live under the deployment's prefix: ${counters.join(', ')}`)
  t.ok(counters.every((k) => !k.includes(KEY) && !k.includes(OTHER)), 'keyed by key id, never by the key itself')
  const ttl = await redis.pttl(counters[0]!)
  t.ok(ttl > 0 && ttl <= 60_000, 'a counter expires with its window')
})

t.test("another deployment's prefix on the same Redis has its own counters", async (t) => {
  const blue = deployment(t)
  const green = deployment(t)
  const { app: a } = await buildTestApp(t, { keysDoc, config: { store: blue.url, rateLimitMax: 1, rateLimitWindowMs: 60_000 } })
  const { app: b } = await buildTestApp(t, { keysDoc, config: { store: green.url, rateLimitMax: 1, rateLimitWindowMs: 60_000 } })
  t.equal((await get(a, '/v1/summary', auth(KEY))).status, 200)
  t.equal((await get(a, '/v1/summary', auth(KEY))).status, 429)
  t.equal((await get(b, '/v1/summary', auth(KEY))).status, 200, 'green counts apart from blue')
})
