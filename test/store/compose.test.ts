/**
 * The composition (src/store/compose.ts): a Store made of parts hands each
 * method to the part whose contract it is, is ready when every backend is,
 * and a part may come from another store.
 */
import t, { type Test } from 'tap'
import { ComposedStore } from '../../src/store/compose.js'
import { MemoryCancelBus, MemoryStore } from '../../src/store/memory.js'
import { MemoryRunState } from '../../src/store/memory-runs.js'
import { MemoryWriteAhead } from '../../src/store/memory-write-ahead.js'
import { MemoryUncertainWrites } from '../../src/store/memory-uncertain.js'
import { MemoryTenantKeys } from '../../src/store/memory-keys.js'
import type { StoreBackend } from '../../src/store/types.js'
import { type Harness, againstEveryStore, makeReceipt, makeRun } from './harness.js'
import { FakeClock } from '../clock.js'

await againstEveryStore('composed store', contract)

async function contract (t: Test, h: Harness): Promise<void> {
  t.test('the store is ready', async (t) => {
    const { store } = await h.open(t)
    t.equal(await store.ready(), true)
  })
}

/** Memory parts, with the receipt journal of another store and the given backends. */
function composed (t: Test, backends: StoreBackend[] = []): { store: ComposedStore, journal: MemoryStore } {
  const clock = new FakeClock(1_800_000_000_000)
  const now = (): number => clock.now()
  const runs = new MemoryRunState({ runTtlMs: 60_000, maxRuns: 10, now })
  const journal = new MemoryStore({ runTtlMs: 60_000, maxRuns: 10, receiptRetentionMs: 60_000, maxReceipts: 10, clock, sweepIntervalMs: 0 })
  t.teardown(() => journal.close())
  const uncertain = new MemoryUncertainWrites(runs, now)
  const writes = new MemoryWriteAhead(runs, uncertain, now)
  const store = new ComposedStore({ runs, batches: runs.answers, receipts: journal, uncertain, writes, cancel: new MemoryCancelBus(), keys: new MemoryTenantKeys(clock, (runId) => runs.has(runId) ? 'held' : undefined), backends })
  return { store, journal }
}

t.test('a part taken from another store serves its contract there, the others here', async (t) => {
  const { store, journal } = composed(t)
  t.equal(await store.createRun(makeRun('r1', 1_800_000_000_000)), true)
  t.equal(await journal.getRun('r1'), undefined, 'the run is in the run state part')
  const receipt = makeReceipt('r1', 'op_1')
  t.same(await store.putReceipt(receipt, 'acme'), receipt)
  t.same(await journal.getReceipt('op_1'), { receipt, tenant: 'acme' }, 'the receipt is in the other store')
  t.same(await store.listReceipts('r1'), [receipt])
})

t.test('the composed store is ready only when every backend is, and closes each once', async (t) => {
  let up = true
  let closed = 0
  const backend: StoreBackend = { ready: async () => up, close: async () => { closed++ } }
  const { store } = composed(t, [backend, { ready: async () => true, close: async () => { closed++ } }])
  t.equal(await store.ready(), true)
  up = false
  t.equal(await store.ready(), false)
  await store.close()
  t.equal(closed, 2)
})
