/**
 * `compare.js --store redis://…`: two builds paired on the Redis store, each
 * under a key prefix of its own, and the database left empty; never a timing.
 */
import { join } from 'node:path'
import t from 'tap'
import { Redis } from 'ioredis'
import type { Comparison } from '../../bench/compare.js'
import { REDIS_URL } from '../store/harness.js'
import { benchTree, runReport } from './scratch.js'

t.test('the build comparison runs both builds on the Redis store and leaves its database empty', async (t) => {
  const out = benchTree()
  // A database of its own: the comparison flushes it before and after.
  const url = `${REDIS_URL}/7`
  const redis = new Redis(url)
  t.teardown(() => redis.quit())
  await redis.set('left-before', '1')
  const c = await runReport<Comparison>(t, [join(out, 'bench', 'compare.js'), out, out, '--batch', '1', '--conns', '2', '--rounds', '2', '--window-ms', '100', '--warmup-ms', '50', '--store', url, '--json'], 100_000)
  t.equal(c.options.store, url)
  t.equal(c.ratios.length, 2, 'a ratio per round')
  for (const f of [c.a, c.b]) t.ok(f.callsPerSec.every((x) => x > 0), 'each build completed batches on Redis in every round')
  t.equal(await redis.dbsize(), 0, 'nothing is left in the database, not even what was there before')
})
