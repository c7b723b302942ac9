/**
 * The UncertainWrites contract (src/store/uncertain-writes.ts) and the
 * run state's share of retry safety (SPEC section 14), against the memory
 * store and the Redis store alike: the run of an uncertain write (unresolved,
 * or resolved since, while the run is held) found by its operation id alone,
 * the count behind the gauge, short recovery locks, and the run record's uncertainties stored with the batch
 * that made them and expiring with the run. Redis cases are skipped, saying
 * why, when no Redis answers at TOOLGATE_TEST_REDIS_URL.
 */
import type { Test } from 'tap'
import type { Uncertainty } from '../../src/model/uncertainty.js'
import { type Harness, againstEveryStore, makeRun } from './harness.js'

await againstEveryStore('UncertainWrites contract', contract)

function uncertainty (operationId: string, over: Partial<Uncertainty> = {}): Uncertainty {
  return { operationId, fingerprint: `fp_${operationId}`, conflictKey: 'acct:a', callId: `call_${operationId}`, batchId: 'b1', tool: 'pay', action: false, since: 1_800_000_000_000, ...over }
}

async function contract (t: Test, h: Harness): Promise<void> {
  t.jobs = 3

  t.test('indexUncertain notes the run of each operation for every client; a missing run notes nothing', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.indexUncertain('r1', ['op_1', 'op_2'])
    t.equal(await peer.runOfUncertain('op_1'), 'r1')
    t.equal(await peer.runOfUncertain('op_2'), 'r1')
    await store.indexUncertain('nope', ['op_3'])
    t.equal(await store.runOfUncertain('op_3'), undefined)
    t.equal(await store.runOfUncertain('op_never'), undefined)
    await store.unindexUncertain('op_never')
  })

  t.test("a batch's uncertainties are stored in its final update with its stats, before its answer: a peer reads both, and countUncertain counts them", async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.updateRunWithBatchId('r1', 'b1', (run, entry) => {
      entry.requestHash = 'hash1'
      run.inFlight = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 60_000 }
    })
    const made = [uncertainty('op_1'), uncertainty('op_2', { action: true, conflictKey: null })]
    // As the engine does: note the runs first, then one update holds the entries and the batch's other changes.
    await store.indexUncertain('r1', made.map((u) => u.operationId))
    await store.updateRun('r1', (run) => {
      run.uncertain = structuredClone(made)
      run.counters.toolCalls += 2
    })
    t.equal(await store.completeBatch('r1', 'replica-a', { batchId: 'b1', requestHash: 'hash1', responseJson: '{"results":[]}', completedAt: now() }), true)
    const read = await peer.getRun('r1')
    t.same(read?.uncertain, made, 'kept exactly as written')
    t.equal(read?.counters.toolCalls, 2)
    t.equal(read?.inFlight, null)
    t.equal(await peer.countUncertain(), 2)

    // Resolving one, whatever its outcome: off the run, then off the count; only its run is still known.
    await peer.updateRun('r1', (run) => {
      run.uncertain = run.uncertain!.filter((u) => u.operationId !== 'op_1')
    })
    await peer.unindexUncertain('op_1')
    t.equal(await store.countUncertain(), 1)
    t.same((await store.getRun('r1'))?.uncertain, [made[1]])
    t.equal(await store.runOfUncertain('op_1'), 'r1')
  })

  t.test('unindexUncertain stops counting an operation, but every client still finds its run while the run is held; an unknown one changes nothing', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.indexUncertain('r1', ['op_1', 'op_2'])
    await store.updateRun('r1', (run) => { run.uncertain = [uncertainty('op_1'), uncertainty('op_2')] })
    t.equal(await store.countUncertain(), 2)
    await peer.updateRun('r1', (run) => { run.uncertain = [uncertainty('op_2')] })
    await peer.unindexUncertain('op_1')
    t.equal(await store.countUncertain(), 1, 'a resolved write is not counted')
    t.equal(await store.runOfUncertain('op_1'), 'r1', 'its run is still known')
    t.equal(await peer.runOfUncertain('op_1'), 'r1')
    t.equal(await store.runOfUncertain('op_2'), 'r1')
    await store.unindexUncertain('op_1')
    t.equal(await store.countUncertain(), 1, 'resolved again: counted once still')
    t.equal(await store.runOfUncertain('op_1'), 'r1')
    await store.unindexUncertain('op_never')
    t.equal(await store.runOfUncertain('op_never'), undefined)
    t.equal(await store.countUncertain(), 1)
  })

  t.test('a resolved write is known only while its run is held: it goes with the run', async (t) => {
    const { store, now, advance } = await h.open(t, { runTtlMs: h.ttl.short, receiptRetentionMs: 60_000 })
    await store.createRun(makeRun('r1', now()))
    await store.indexUncertain('r1', ['op_1'])
    await store.updateRun('r1', (run) => { run.uncertain = [uncertainty('op_1')] })
    await store.updateRun('r1', (run) => { delete run.uncertain })
    await store.unindexUncertain('op_1')
    t.equal(await store.runOfUncertain('op_1'), 'r1')
    t.equal(await store.countUncertain(), 0)
    await advance(h.ttl.short + 300)
    t.equal(await store.getRun('r1'), undefined, 'the run is gone')
    t.equal(await store.runOfUncertain('op_1'), undefined, 'and the resolved write with it')
    // Resolved after its run is gone: nothing is noted of it either.
    await store.createRun(makeRun('r2', now()))
    await store.indexUncertain('r2', ['op_2'])
    await advance(h.ttl.short + 300)
    await store.unindexUncertain('op_2')
    t.equal(await store.runOfUncertain('op_2'), undefined)
    t.equal(await store.countUncertain(), 0)
  })

  t.test('concurrent updates of the uncertainties from two clients lose none', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? store : peer).updateRun('r1', (run) => {
      run.uncertain = [...(run.uncertain ?? []), uncertainty(`op_${i}`)]
    })))
    t.same((await store.getRun('r1'))?.uncertain?.map((u) => u.operationId).sort(), Array.from({ length: 10 }, (_, i) => `op_${i}`).sort())
  })

  t.test('an ended run keeps its uncertainties, so they can still be resolved', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.indexUncertain('r1', ['op_1'])
    await store.updateRun('r1', (run) => { run.uncertain = [uncertainty('op_1')] })
    await peer.endRun('r1', now())
    t.same((await store.getRun('r1'))?.uncertain, [uncertainty('op_1')])
    t.equal(await store.runOfUncertain('op_1'), 'r1')
  })

  t.test('uncertainties expire with their run: the record, the index and the count', async (t) => {
    const { store, now, advance } = await h.open(t, { runTtlMs: h.ttl.short })
    await store.createRun(makeRun('r1', now()))
    await store.indexUncertain('r1', ['op_1'])
    await store.updateRun('r1', (run) => { run.uncertain = [uncertainty('op_1')] })
    t.equal(await store.countUncertain(), 1)
    // Past the run's TTL and the slack the index may keep beyond it (at most one more TTL).
    await advance(2 * h.ttl.short + 300)
    t.equal(await store.countUncertain(), 0, 'counted no more, before anything reads the run')
    t.equal(await store.runOfUncertain('op_1'), undefined)
    t.equal(await store.getRun('r1'), undefined)
  })

  t.test('a resolved write of a run id is not found in a later run of that id', async (t) => {
    const { store, peer, now, advance } = await h.open(t, { runTtlMs: h.ttl.short, receiptRetentionMs: 60_000 })
    await store.createRun(makeRun('r1', now(), { tenant: 'acme' }))
    await store.indexUncertain('r1', ['op_1'])
    await store.unindexUncertain('op_1')
    t.equal(await peer.runOfUncertain('op_1'), 'r1')
    await advance(h.ttl.short + 300)
    t.equal(await peer.createRun(makeRun('r1', now(), { tenant: 'beta' })), true, 'the id is used again')
    t.equal(await store.runOfUncertain('op_1'), undefined, 'the later run knows nothing of it')
    t.equal(await peer.runOfUncertain('op_1'), undefined)
  })

  t.test('tryLock: one owner at a time, taken again by its owner, released only by it, and lapsing after its ttl', async (t) => {
    const { store, peer, advance } = await h.open(t)
    // The ownership cases hold their locks far longer than the test runs, so a
    // slow machine cannot lapse one between two steps; the lapse has its own case.
    const held = 60_000
    t.equal(await store.tryLock('recover:op_1', 'a', held), true)
    t.equal(await peer.tryLock('recover:op_1', 'b', held), false, 'held by another owner')
    t.equal(await store.tryLock('recover:op_1', 'a', held), true, 'its owner may take it again')
    t.equal(await peer.tryLock('recover:op_2', 'b', held), true, 'another name is another lock')
    await peer.unlock('recover:op_1', 'b')
    t.equal(await peer.tryLock('recover:op_1', 'b', held), false, 'not released by another owner')
    await store.unlock('recover:op_1', 'a')
    t.equal(await peer.tryLock('recover:op_1', 'b', h.ttl.short), true, 'released by its owner')
    await advance(h.ttl.short + 100)
    t.equal(await store.tryLock('recover:op_1', 'a', held), true, 'lapsed after its ttl: another owner takes it')
    t.equal(await peer.tryLock('recover:op_1', 'b', held), false, 'and holds it')
  })
}
