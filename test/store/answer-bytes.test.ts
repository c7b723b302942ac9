/**
 * The memory store's bound on the bytes of batch answers it keeps for
 * resends (src/store/memory-runs.ts): over it, the tenant whose runs hold
 * the most gives up runs, its ended ones first, then its least recently
 * used idle ones, never one with a batch in flight; another tenant's runs
 * and answers stay.
 */
import t from 'tap'
import { MemoryStore } from '../../src/store/memory.js'
import { resolveRunOptions } from '../../src/runs/options.js'
import { newRunRecord } from '../../src/runs/record.js'
import { FakeClock } from '../clock.js'

const clock = new FakeClock(1_000_000)

function storeWith (maxAnswerBytes: number): MemoryStore {
  const store = new MemoryStore({ runTtlMs: 60_000, maxRuns: 1000, receiptRetentionMs: 1000, maxReceipts: 1000, maxAnswerBytes, clock, sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  return store
}

/** A batch of the run answered with `size` bytes, as the engine answers one: the id with the lease, then the answer with the release. */
async function answer (store: MemoryStore, runId: string, batchId: string, size: number): Promise<void> {
  await store.updateRunWithBatchId(runId, batchId, (run, entry) => {
    entry.requestHash = `h-${batchId}`
    run.inFlight = { batchId, owner: 'me', leaseExpiresAt: clock.now() + 30_000 }
  })
  t.ok(await store.completeBatch(runId, 'me', { batchId, requestHash: `h-${batchId}`, responseJson: JSON.stringify({ blob: 'x'.repeat(size) }), completedAt: clock.now() }))
}

async function create (store: MemoryStore, runId: string, tenant: string): Promise<void> {
  t.ok(await store.createRun(newRunRecord(runId, tenant, resolveRunOptions({}, 8), clock.now())))
}

t.test('a tenant of large answers gives up its own least recently used runs; another tenant keeps its runs and answers', async (t) => {
  const store = storeWith(100_000)
  await create(store, 'quiet-1', 'quiet')
  await answer(store, 'quiet-1', 'q', 5_000)
  for (let i = 0; i < 8; i++) {
    await create(store, `loud-${i}`, 'loud')
    clock.advance(1)
    await answer(store, `loud-${i}`, 'b', 20_000)
  }
  t.ok(await store.getRun('quiet-1'), 'the other tenant\'s run stays')
  t.ok(await store.getBatch('quiet-1', 'q'), 'and its answer')
  t.equal(await store.getRun('loud-0'), undefined, 'the loud tenant\'s least recently used run went')
  t.ok(await store.getRun('loud-7'), 'its run just answered stays while others of its can go')
  t.ok(await store.getBatch('loud-7', 'b'))
})

t.test('a run with a batch in flight is never given up; a run over the bound by itself is given up once idle', async (t) => {
  const store = storeWith(10_000)
  await create(store, 'busy', 'a')
  await answer(store, 'busy', 'b1', 3_000)
  await store.updateRunWithBatchId('busy', 'b2', (run, entry) => {
    entry.requestHash = 'h-b2'
    run.inFlight = { batchId: 'b2', owner: 'me', leaseExpiresAt: clock.now() + 30_000 }
  })
  await create(store, 'big', 'a')
  await answer(store, 'big', 'b', 50_000)
  t.ok(await store.getRun('busy'), 'in flight: kept')
  t.equal(await store.getRun('big'), undefined, 'the run just answered, alone over the bound and idle, went: its answer was sent, its run is gone')
  t.equal(await store.getBatch('big', 'b'), undefined)
})

t.test('answers of a run that leaves give their bytes back', async (t) => {
  const store = storeWith(70_000)
  for (let i = 0; i < 3; i++) {
    await create(store, `r${i}`, 'a')
    await answer(store, `r${i}`, 'b', 20_000)
  }
  t.ok(await store.getRun('r0'), 'within the bound: all kept')
  t.ok(await store.getRun('r1'))
  t.ok(await store.getRun('r2'))
  await store.updateRun('r0', (run) => { run.state = 'ended' })
  await create(store, 'r3', 'a')
  await answer(store, 'r3', 'b', 20_000)
  t.equal(await store.getRun('r0'), undefined, 'the tenant\'s ended run went first')
  t.ok(await store.getRun('r1'), 'its idle runs stay while the answers fit')
})
