/**
 * The RunStateStore contract's bounds: the runs counted, and which run a
 * full store evicts for a new one (and which never).
 */
import type { Test } from 'tap'
import { StoreFullError } from '../../src/store/types.js'
import { type Harness, againstEveryStore, makeRun } from './harness.js'

await againstEveryStore('RunStateStore bounds', contract)

async function contract (t: Test, h: Harness): Promise<void> {
  // Every case has a store (and key prefix) of its own, so the ones that wait on real time overlap.
  t.jobs = 4
  t.test('countRuns counts runs held, active ones, and ones with a batch in flight', async (t) => {
    const { store, peer, now } = await h.open(t)
    t.same(await store.countRuns(), { total: 0, active: 0, inFlight: 0 })
    await store.createRun(makeRun('r1', now()))
    await store.createRun(makeRun('r2', now()))
    await store.createRun(makeRun('r3', now()))
    await store.endRun('r2', now())
    await peer.updateRun('r3', (run) => { run.inFlight = { batchId: 'b', owner: 'x', leaseExpiresAt: now() + 60_000 } })
    t.same(await peer.countRuns(), { total: 3, active: 2, inFlight: 1 })
  })

  t.test('a full store evicts an ended run first, then the least recently used idle one, never a leased one', async (t) => {
    const { store, peer, now, advance } = await h.open(t, { maxRuns: 3 })
    for (const id of ['a', 'b', 'c']) {
      await store.createRun(makeRun(id, now()))
      await advance(5)
    }
    await store.endRun('b', now())
    await advance(5)
    t.equal(await peer.createRun(makeRun('d', now())), true)
    t.equal(await store.getRun('b'), undefined, 'the ended run went first')
    await advance(5)
    await store.updateRun('a', (run) => { run.inFlight = { batchId: 'b1', owner: 'x', leaseExpiresAt: now() + 60_000 } })
    await advance(5)
    await store.updateRun('c', () => {})
    await advance(5)
    t.equal(await peer.createRun(makeRun('e', now())), true)
    t.equal(await store.getRun('d'), undefined, 'the least recently used idle run went next')
    t.ok(await store.getRun('a'), 'the leased run stays though it is older')
    t.ok(await store.getRun('c'))
    t.ok(await store.getRun('e'))
  })

  t.test('an evicted run takes its batch ids and records with it: a new run of the same id knows none', async (t) => {
    const { store, peer, now, advance } = await h.open(t, { maxRuns: 1 })
    await store.createRun(makeRun('a', now()))
    await store.updateRunWithBatchId('a', 'b1', (run, entry) => {
      entry.requestHash = 'hash1'
      run.inFlight = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 1 }
    })
    await store.completeBatch('a', 'replica-a', { batchId: 'b1', requestHash: 'hash1', responseJson: '{}', completedAt: now() })
    await advance(5)
    t.equal(await peer.createRun(makeRun('b', now())), true, 'b evicts a')
    await advance(5)
    t.equal(await peer.createRun(makeRun('a', now())), true, 'a again evicts b')
    t.same(await store.updateRunWithBatchId('a', 'b1', (_run, entry) => entry.requestHash), { found: true, value: undefined }, 'no batch id of the old run')
    t.equal(await store.getBatch('a', 'b1'), undefined, 'no batch record either')
  })

  t.test('a run ended while its batch is in flight is not evicted', async (t) => {
    const { store, now, advance } = await h.open(t, { maxRuns: 2 })
    await store.createRun(makeRun('ending', now()))
    await store.updateRun('ending', (run) => { run.inFlight = { batchId: 'b1', owner: 'x', leaseExpiresAt: now() + 60_000 } })
    await store.endRun('ending', now())
    await advance(5)
    await store.createRun(makeRun('idle', now()))
    await advance(5)
    t.equal(await store.createRun(makeRun('new', now())), true)
    t.ok(await store.getRun('ending'), 'the ended run with a batch in flight stays')
    t.equal(await store.getRun('idle'), undefined, 'the idle run went instead')
  })

  t.test('a store full of runs with batches in flight refuses a new run', async (t) => {
    const { store, now } = await h.open(t, { maxRuns: 2 })
    for (const id of ['a', 'b']) {
      await store.createRun(makeRun(id, now(), { inFlight: { batchId: 'b1', owner: 'x', leaseExpiresAt: now() + 60_000 } }))
    }
    await t.rejects(store.createRun(makeRun('c', now())), StoreFullError)
    t.ok(await store.getRun('a'))
    t.ok(await store.getRun('b'))
  })
}
