/**
 * The projection pool (src/receipts/projection-pool.ts): projections wait
 * their turn for a worker and each has its own time box once a worker takes
 * it; a worker stopped or dead is replaced; a closed pool fails what it
 * holds. That this file's process ends at all says idle workers do not keep
 * a process alive.
 */
import t from 'tap'
import { compileProjection, projectReceipt } from '../../src/receipts/projection.js'
import { ProjectionPool } from '../../src/receipts/projection-pool.js'

const input = { intent: { action: 'note' }, receipt: { status: 'committed', result: { items: [3, 1, 2] } } }
const MAX = 4096
const items = Array.from({ length: 50_000 }, (_, i) => (i * 7919) % 50_000)
const big = { intent: { action: 'sort' }, receipt: { status: 'committed', result: { items } } }
/** A runaway on `big`, an ordinary projection on `input`. */
const SORT = "{ 'first': $sort(receipt.result.items)[0] }"

t.test('projections waiting behind a runaway one are evaluated after it, each in its own time box', async t => {
  const pool = new ProjectionPool({ size: 1 })
  t.teardown(() => pool.close())
  const runaway = projectReceipt(compileProjection(SORT, { pool }), big, MAX)
  // Each waits for the runaway's whole box and more; counted from the wait, it would time out.
  const waiting = Array.from({ length: 3 }, async () => projectReceipt(compileProjection(SORT, { pool, timeoutMs: 100 }), input, MAX))
  t.same(await runaway, { ok: false, problem: 'threw' })
  for (const result of await Promise.all(waiting)) t.same(result, { ok: true, content: '{"first":1}' })
})

t.test('a pool of two evaluates two projections at once', async t => {
  const pool = new ProjectionPool({ size: 2 })
  t.teardown(() => pool.close())
  const started = performance.now()
  const runaways = await Promise.all([1, 2].map(async () => projectReceipt(compileProjection(SORT, { pool, timeoutMs: 300 }), big, MAX)))
  t.same(runaways, [{ ok: false, problem: 'threw' }, { ok: false, problem: 'threw' }])
  t.ok(performance.now() - started < 5000, 'side by side')
  t.same(await projectReceipt(compileProjection(SORT, { pool }), input, MAX), { ok: true, content: '{"first":1}' }, 'stopped workers are replaced')
})

t.test('an input that cannot be copied to a worker fails alone', async t => {
  const pool = new ProjectionPool({ size: 1 })
  t.teardown(() => pool.close())
  const projection = compileProjection(SORT, { pool })
  await t.rejects(projection.evaluate({ f: () => 1 }, MAX), { message: 'Projection evaluation failed: DataCloneError' })
  t.same(await projectReceipt(projection, input, MAX), { ok: true, content: '{"first":1}' })
})

t.test('a closed pool fails the projections it holds and refuses new ones', async t => {
  const pool = new ProjectionPool({ size: 1 })
  const inFlight = t.rejects(compileProjection(SORT, { pool, timeoutMs: 60_000 }).evaluate(big, MAX), { message: 'Projection evaluation failed: closed' })
  const waiting = t.rejects(compileProjection(SORT, { pool }).evaluate(input, MAX), { message: 'Projection evaluation failed: closed' })
  // Time for the worker to start and take the first (on a loaded machine it may still be starting: both wait then).
  await new Promise((resolve) => setTimeout(resolve, 500))
  await pool.close()
  await inFlight
  await waiting
  await t.rejects(compileProjection(SORT, { pool }).evaluate(input, MAX), { message: 'Projection evaluation failed: closed' })
})

t.test('pool options must be positive integers', async t => {
  for (const opts of [{ size: 0 }, { maxOldGenerationSizeMb: 1.5 }, { graceMs: -1 }, { stackSizeMb: Number.NaN }]) {
    t.throws(() => new ProjectionPool(opts), TypeError, JSON.stringify(opts))
  }
})

t.test('tenants take turns for the workers: one tenant\'s backlog of runaways does not hold another tenant\'s projection', async t => {
  const pool = new ProjectionPool({ size: 1 })
  t.teardown(() => pool.close())
  const order: string[] = []
  const runaway = compileProjection(SORT, { pool, timeoutMs: 100 })
  const hostile = Array.from({ length: 4 }, async (_, i) => {
    const result = await projectReceipt(runaway, big, MAX, 'tenant-a')
    order.push(`a${i + 1}`)
    return result
  })
  const other = projectReceipt(compileProjection(SORT, { pool }), input, MAX, 'tenant-b').then((result) => {
    order.push('b')
    return result
  })
  t.same(await other, { ok: true, content: '{"first":1}' })
  for (const result of await Promise.all(hostile)) t.same(result, { ok: false, problem: 'threw' })
  t.same(order, ['a1', 'b', 'a2', 'a3', 'a4'], 'the other tenant\'s projection is next after the one running')
})
