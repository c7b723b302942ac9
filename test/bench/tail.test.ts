/**
 * `node dist/bench/tail.js`, so the Redis tail's attribution cannot rot:
 * one short round at a low rate, and assertions that every target answered
 * and every suspect's figure was printed, never on a timing.
 */
import { join } from 'node:path'
import t from 'tap'
import { Redis } from 'ioredis'
import { REDIS_URL } from '../store/harness.js'
import { benchTree, runNode } from './scratch.js'

t.test('the tail attribution runs every target and prints a figure for each suspect', async (t) => {
  const out = benchTree()
  // A database of its own: the tool flushes it before and after.
  const url = `${REDIS_URL}/8`
  const admin = new Redis(REDIS_URL)
  t.teardown(() => admin.quit())
  const slowlogBefore = (await admin.config('GET', 'slowlog-log-slower-than') as string[])[1]
  const run = await runNode([join(out, 'bench', 'tail.js'), '--rounds', '1', '--rate', '50', '--warmup-ms', '400'], 200_000, { TOOLGATE_BENCH_REDIS: url })
  t.equal(run.code, 0, `the tool exits cleanly${run.code === 0 ? '' : `: ${run.stderr.slice(-2000)}`}`)
  for (const target of ['relay', 'memory', 'redis']) t.match(run.stdout, new RegExp(`^round 1 ${target}: load [\\d.]+, p50 [\\d.]+ ms, p99 [\\d.]+ ms`, 'm'), `a row for ${target}`)
  const redisRow = run.stdout.split('\n').find((l) => l.startsWith('round 1 redis:')) ?? ''
  for (const suspect of ['in a collector pause', 'collector pauses', 'event-loop delay', 'Redis commands, send to reply', 'server EVALSHA', 'SLOWLOG']) {
    t.ok(redisRow.includes(suspect), `the Redis row says ${suspect}`)
  }
  t.equal((await admin.config('GET', 'slowlog-log-slower-than') as string[])[1], slowlogBefore, 'the server\'s SLOWLOG threshold is put back')
  const db = new Redis(url)
  t.teardown(() => db.quit())
  t.equal(await db.dbsize(), 0, 'the database is left empty')
})
