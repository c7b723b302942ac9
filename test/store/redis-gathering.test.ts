/**
 * How the Redis store's commands leave: those sent in one turn of the
 * event loop (batches in flight together, a listing's chunk) in one socket
 * write, and none held back until the command before it is answered
 * (ioredis' auto-pipelining sent one pipeline at a time, so a command
 * waited for the round trip of the one before). The store reaches Redis through the test proxy
 * (harness.ts), which notes each chunk the client writes and can hold
 * Redis' replies. Skipped, saying why, when no Redis answers at
 * TOOLGATE_TEST_REDIS_URL.
 */
import { randomUUID } from 'node:crypto'
import t, { type Test as Tap } from 'tap'
import { RedisConnection } from '../../src/store/redis-connection.js'
import { waitFor } from '../schedule/harness.js'
import { type RedisProxy, deleteByPrefix, redisProxy, redisUnavailable } from './harness.js'

const noRedis = await redisUnavailable()

async function connected (t: Tap): Promise<{ proxy: RedisProxy, conn: RedisConnection }> {
  const prefix = `toolgate-test:${randomUUID()}:`
  t.teardown(() => deleteByPrefix(prefix))
  const proxy = await redisProxy(t)
  const conn = new RedisConnection({ connection: `redis://127.0.0.1:${proxy.port}`, prefix, commandTimeoutMs: 5000 })
  t.teardown(() => conn.close())
  await conn.call(() => conn.redis.set(conn.key('before'), '1'))
  return { proxy, conn }
}

/** How many SET commands of this test's keys the chunks hold. */
const setsIn = (chunks: string[], conn: RedisConnection): number =>
  chunks.join('').split(`${conn.key('k')}:`).length - 1

t.test('the commands sent in one turn of the event loop leave in one write', { skip: noRedis }, async (t) => {
  const { proxy, conn } = await connected(t)
  // The socket's writes as the stream hands them to the system: one `_write` per chunk, or one `_writev` for chunks gathered while corked.
  const socket = conn.redis.stream as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>
  let writes = 0
  for (const method of ['_write', '_writev'] as const) {
    const write = socket[method]
    socket[method] = function (this: unknown, ...args: unknown[]) {
      writes++
      return write.apply(this, args)
    }
  }
  proxy.chunks.length = 0
  const sent = Array.from({ length: 20 }, (_, i) => conn.call(() => conn.redis.set(conn.key('k', String(i)), String(i))))
  t.same(await Promise.all(sent), Array(20).fill('OK'), 'every command is answered')
  t.equal(setsIn(proxy.chunks, conn), 20, 'all 20 reached Redis')
  t.equal(writes, 1, '20 commands of one turn, one write')
  t.equal(conn.redis.stream.writableCorked, 0, 'the socket is uncorked after the turn')
  // A command of a later turn is not held for a later write.
  t.equal(await conn.call(() => conn.redis.get(conn.key('k', '7'))), '7')
  t.equal(writes, 2)
})

t.test('a command is sent while the one before it is still unanswered', { skip: noRedis }, async (t) => {
  const { proxy, conn } = await connected(t)
  proxy.chunks.length = 0
  proxy.holdReplies(true)
  const first = conn.call(() => conn.redis.set(conn.key('k', 'first'), 'a'))
  await waitFor(() => setsIn(proxy.chunks, conn) === 1, 'the first command to reach the proxy', 2000)
  const second = conn.call(() => conn.redis.set(conn.key('k', 'second'), 'b'))
  // ioredis' auto-pipelining wrote the second only once the first was answered: this waited in vain.
  await waitFor(() => setsIn(proxy.chunks, conn) === 2, 'the second command to reach the proxy while the first is unanswered', 2000)
  proxy.holdReplies(false)
  t.same(await Promise.all([first, second]), ['OK', 'OK'])
})
