import t, { type Test } from 'tap'
import { MemoryStore, StoreFullError } from '../../src/store/memory.js'
import { resolveRunOptions } from '../../src/runs/options.js'
import { newRunRecord } from '../../src/runs/record.js'
import type { RunRecord } from '../../src/model/run.js'
import { buildTestApp, get, post, startExecutor, tool, holdCalls } from '../helper.js'
import { FakeClock } from '../clock.js'

const TTL = 60_000

/** A store on a clock the test moves by hand. */
function storeAt (t: Test, opts: { maxRuns?: number, runTtlMs?: number } = {}): { store: MemoryStore, clock: FakeClock } {
  const clock = new FakeClock(1_000_000)
  const store = new MemoryStore({
    runTtlMs: opts.runTtlMs ?? TTL,
    maxRuns: opts.maxRuns ?? 100,
    receiptRetentionMs: 1000,
    maxReceipts: 100,
    clock,
    sweepIntervalMs: 0
  })
  t.teardown(() => store.close())
  return { store, clock }
}

function record (runId: string, at: number): RunRecord {
  return newRunRecord(runId, 'default', resolveRunOptions({}, 8), at)
}

/** Marks a run as having a batch in flight, the way the engine's lease does. */
async function lease (store: MemoryStore, runId: string, at: number): Promise<void> {
  await store.updateRun(runId, (r) => { r.inFlight = { batchId: 'b', owner: 'test', leaseExpiresAt: at + 30_000 } })
}

async function release (store: MemoryStore, runId: string): Promise<void> {
  await store.updateRun(runId, (r) => { r.inFlight = null })
}

async function held (store: MemoryStore, ids: string[]): Promise<string[]> {
  const out: string[] = []
  for (const id of ids) if ((await store.getRun(id)) !== undefined) out.push(id)
  return out
}

t.test('an idle run lives until exactly TTL after its last use, then is gone', async (t) => {
  const { store, clock } = storeAt(t)
  t.ok(await store.createRun(record('a', clock.now())))
  clock.advance(TTL - 1)
  t.ok(await store.getRun('a'), 'still there 1 ms before the TTL')
  clock.advance(1)
  t.equal(await store.getRun('a'), undefined, 'gone at the TTL')
  t.equal((await store.updateRun('a', () => 1)).found, false, 'and cannot be updated')
  t.equal((await store.countRuns()).total, 0)
})

t.test('using a run restarts its idle time', async (t) => {
  const { store, clock } = storeAt(t)
  await store.createRun(record('a', clock.now()))
  clock.advance(TTL - 10)
  await store.updateRun('a', (r) => { r.counters.turns++ })
  clock.advance(TTL - 10)
  t.ok(await store.getRun('a'), 'alive: its last use was less than a TTL ago')
  clock.advance(10)
  t.equal(await store.getRun('a'), undefined)
})

t.test('an expired run id can be used again for a new run', async (t) => {
  const { store, clock } = storeAt(t)
  await store.createRun(record('a', clock.now()))
  t.equal(await store.createRun(record('a', clock.now())), false, 'taken while it lives')
  clock.advance(TTL)
  t.equal(await store.createRun(record('a', clock.now())), true, 'free once expired')
})

t.test('a run with a batch in flight never expires; once the batch is done it expires a TTL later', async (t) => {
  const { store, clock } = storeAt(t)
  await store.createRun(record('a', clock.now()))
  await lease(store, 'a', clock.now())
  clock.advance(TTL * 5)
  t.ok(await store.getRun('a'), 'held while in flight')
  store.sweep()
  t.ok(await store.getRun('a'), 'a sweep does not take it either')
  await release(store, 'a')
  clock.advance(TTL - 1)
  t.ok(await store.getRun('a'))
  clock.advance(1)
  t.equal(await store.getRun('a'), undefined)
})

t.test('a sweep drops every expired idle run and keeps the others', async (t) => {
  const { store, clock } = storeAt(t)
  await store.createRun(record('old1', clock.now()))
  await store.createRun(record('old2', clock.now()))
  clock.advance(TTL / 2)
  await store.createRun(record('young', clock.now()))
  await store.createRun(record('busy', clock.now() - TTL / 2))
  await lease(store, 'busy', clock.now())
  clock.advance(TTL / 2)
  store.sweep()
  t.strictSame(await store.countRuns(), { total: 2, active: 2, inFlight: 1 })
  t.strictSame(await held(store, ['old1', 'old2', 'young', 'busy']), ['young', 'busy'])
})

t.test('when full, an ended run is evicted first, even if idle runs are older', async (t) => {
  const { store, clock } = storeAt(t, { maxRuns: 3 })
  for (const id of ['a', 'b', 'c']) {
    await store.createRun(record(id, clock.now()))
    clock.advance(1)
  }
  await store.endRun('c', clock.now())
  t.ok(await store.createRun(record('d', clock.now())))
  t.strictSame(await held(store, ['a', 'b', 'c', 'd']), ['a', 'b', 'd'])
})

t.test('ended runs go in the order they ended', async (t) => {
  const { store, clock } = storeAt(t, { maxRuns: 3 })
  for (const id of ['a', 'b', 'c']) await store.createRun(record(id, clock.now()))
  await store.endRun('b', clock.now())
  await store.endRun('a', clock.now())
  await store.createRun(record('d', clock.now()))
  t.strictSame(await held(store, ['a', 'b', 'c', 'd']), ['a', 'c', 'd'], 'b ended first, so it went first')
  await store.createRun(record('e', clock.now()))
  t.strictSame(await held(store, ['a', 'c', 'd', 'e']), ['c', 'd', 'e'], 'then a')
})

t.test('with no ended run, the least recently used idle run is evicted', async (t) => {
  const { store, clock } = storeAt(t, { maxRuns: 3 })
  for (const id of ['a', 'b', 'c']) {
    await store.createRun(record(id, clock.now()))
    clock.advance(1)
  }
  await store.updateRun('a', (r) => { r.counters.turns++ })
  await store.createRun(record('d', clock.now()))
  t.strictSame(await held(store, ['a', 'b', 'c', 'd']), ['a', 'c', 'd'], 'b was the least recently used')
  await store.createRun(record('e', clock.now()))
  t.strictSame(await held(store, ['a', 'c', 'd', 'e']), ['a', 'd', 'e'], 'then c')
})

t.test('a run with a batch in flight is never evicted; an idle one goes instead', async (t) => {
  const { store, clock } = storeAt(t, { maxRuns: 2 })
  await store.createRun(record('busy', clock.now()))
  await lease(store, 'busy', clock.now())
  clock.advance(1)
  await store.createRun(record('idle', clock.now()))
  await store.createRun(record('new', clock.now()))
  t.strictSame(await held(store, ['busy', 'idle', 'new']), ['busy', 'new'])
})

t.test('when every run has a batch in flight, a new run is refused with StoreFullError and nothing is evicted', async (t) => {
  const { store, clock } = storeAt(t, { maxRuns: 2 })
  for (const id of ['a', 'b']) {
    await store.createRun(record(id, clock.now()))
    await lease(store, id, clock.now())
  }
  await t.rejects(store.createRun(record('c', clock.now())), StoreFullError)
  t.strictSame(await held(store, ['a', 'b', 'c']), ['a', 'b'])
  await release(store, 'a')
  t.ok(await store.createRun(record('c', clock.now())), 'room again once a batch is done')
  t.strictSame(await held(store, ['a', 'b', 'c']), ['b', 'c'])
})

t.test('a run ended while its batch is still in flight is not evicted', async (t) => {
  const { store, clock } = storeAt(t, { maxRuns: 2 })
  await store.createRun(record('ending', clock.now()))
  await lease(store, 'ending', clock.now())
  await store.endRun('ending', clock.now())
  await store.createRun(record('idle', clock.now()))
  await store.createRun(record('new', clock.now()))
  t.strictSame(await held(store, ['ending', 'idle', 'new']), ['ending', 'new'], 'the idle run went, not the one in flight')
})

t.test('through the API: a run not used for TOOLGATE_RUN_TTL_SECONDS answers 404', async (t) => {
  const clock = new FakeClock()
  const store = new MemoryStore({ runTtlMs: 60_000, maxRuns: 100, receiptRetentionMs: 1000, maxReceipts: 100, clock, sweepIntervalMs: 0 })
  const { app } = await buildTestApp(t, { store, clock, config: { runTtlSeconds: 60 } })
  t.equal((await post(app, '/v1/runs', { runId: 'r1' })).status, 201)
  clock.advance(59_999)
  t.equal((await get(app, '/v1/runs/r1')).status, 200, 'a moment before its TTL: there (reading it is no use that keeps it)')
  clock.advance(1)
  const gone = await get(app, '/v1/runs/r1')
  t.equal(gone.status, 404)
  t.equal(gone.body.code, 'run_not_found')
})

t.test('through the API: TOOLGATE_MAX_RUNS full of runs with batches in flight answers 503 overloaded', async (t) => {
  const ex = await startExecutor(t)
  const { started: isStarted, release } = holdCalls(ex, 'slow')
  const { app } = await buildTestApp(t, { config: { maxRuns: 1 }, tools: [tool('slow', ex.url)] })
  await post(app, '/v1/runs', { runId: 'r1' })
  const pending = post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'slow', arguments: {} }] })
  await isStarted
  const refused = await post(app, '/v1/runs', { runId: 'r2' })
  t.equal(refused.status, 503)
  t.equal(refused.body.code, 'overloaded')
  release()
  t.equal((await pending).status, 200)
  t.equal((await post(app, '/v1/runs', { runId: 'r2' })).status, 201, 'the idle run makes room now')
  t.equal((await get(app, '/v1/runs/r1')).status, 404, 'by being evicted')
})
