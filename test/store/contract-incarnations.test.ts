/**
 * Run incarnations (SPEC section 19), in every store: a run id stored again
 * after its run expired or was evicted is another run, and sees nothing the
 * earlier one left (batch ids, batch answers, receipts listed by run), while
 * the earlier run's receipts stay reachable by operation id, with the tenant
 * that may read them.
 */
import type { Test } from 'tap'
import type { Store } from '../../src/store/types.js'
import { type Harness, againstEveryStore, makeReceipt, makeRun } from './harness.js'

await againstEveryStore('run incarnations', async (t, h) => {
  await contract(t, h)
  await lateWrites(t, h)
})

/** Runs one batch of `runId` to its stored answer, as the engine does: batch id with the lease, answer with the release. */
async function finishBatch (store: Store, runId: string, batchId: string, now: number): Promise<void> {
  await store.updateRunWithBatchId(runId, batchId, (run, entry) => {
    entry.requestHash = `hash-${batchId}`
    run.inFlight = { batchId, owner: 'replica-a', leaseExpiresAt: now + 60_000 }
  })
  const responseJson = JSON.stringify({ runId, turn: 1, results: [{ callId: 'c1', status: 'ok', content: 'secret of the earlier run' }] })
  await store.completeBatch(runId, 'replica-a', { batchId, requestHash: `hash-${batchId}`, responseJson, completedAt: now })
}

async function contract (t: Test, h: Harness): Promise<void> {
  t.jobs = 2
  t.test("a run id reused by another tenant after the run expired sees none of the earlier run's batches or receipts", async (t) => {
    const ttl = h.ttl.short
    const { store, peer, now, advance } = await h.open(t, { runTtlMs: ttl, receiptRetentionMs: 60_000 })
    await store.createRun(makeRun('r1', now(), { tenant: 'acme' }))
    await finishBatch(store, 'r1', 'b1', now())
    await store.putReceipt(makeReceipt('r1', 'op_old'), 'acme')
    t.same((await peer.listReceipts('r1')).map((r) => r.operationId), ['op_old'], 'the first run lists its receipt')

    await advance(ttl * 1.2)
    t.equal(await store.getRun('r1'), undefined, 'the first run expired')
    t.equal(await peer.createRun(makeRun('r1', now(), { tenant: 'beta' })), true, 'another tenant creates a run of the same id')

    t.same(await store.listReceipts('r1'), [], 'the new run lists no receipt of the earlier one')
    t.equal(await store.getBatch('r1', 'b1'), undefined, "nor replays the earlier run's answer")
    t.same(await peer.listBatches('r1'), [], 'nor lists its batches')
    const known = await store.updateRunWithBatchId('r1', 'b1', (_run, entry) => entry.requestHash)
    t.same(known, { found: true, value: undefined }, 'nor knows its batch ids')
    t.same(await peer.getReceipt('op_old'), { receipt: makeReceipt('r1', 'op_old'), tenant: 'acme' }, 'the earlier receipt stays reachable by operation id, with its own tenant')

    await store.putReceipt(makeReceipt('r1', 'op_new'), 'beta')
    t.same((await peer.listReceipts('r1')).map((r) => r.operationId), ['op_new'], 'the new run lists only its own')
  })

  t.test("a run id reused after its run was evicted sees none of the earlier run's batches or receipts", async (t) => {
    const { store, peer, now } = await h.open(t, { maxRuns: 2 })
    await store.createRun(makeRun('r1', now(), { tenant: 'acme' }))
    await finishBatch(store, 'r1', 'b1', now())
    await store.putReceipt(makeReceipt('r1', 'op_old'), 'acme')
    await store.createRun(makeRun('r2', now() + 1))
    await store.createRun(makeRun('r3', now() + 2))
    t.equal(await store.getRun('r1'), undefined, 'the least recently used run was evicted')

    await peer.createRun(makeRun('r1', now(), { tenant: 'beta' }))
    t.same(await store.listReceipts('r1'), [])
    t.equal(await peer.getBatch('r1', 'b1'), undefined)
    t.same(await store.listBatches('r1'), [])
    t.equal((await store.getReceipt('op_old'))?.tenant, 'acme', 'the earlier receipt keeps its tenant')
  })
}

/** Late writes (SPEC section 19): a batch of an earlier incarnation of a run id writes after a later run of that id was created. */
async function lateWrites (t: Test, h: Harness): Promise<void> {
  t.test("an earlier incarnation's late receipt and answer never reach the later run of its id", async (t) => {
    const { store, peer, now } = await h.open(t, { maxRuns: 2 })
    const earlier = makeRun('r1', now(), { tenant: 'acme' })
    await store.createRun(earlier)
    await store.createRun(makeRun('r2', now() + 1))
    await store.createRun(makeRun('r3', now() + 2))
    t.equal(await store.getRun('r1'), undefined, 'the earlier run was evicted')
    const later = makeRun('r1', now() + 3, { tenant: 'beta' })
    await peer.createRun(later)
    // The later run's batch has the same id, on the same replica, as the earlier run's batch still writing.
    await peer.updateRunWithBatchId('r1', 'b1', (run, entry) => {
      entry.requestHash = 'hash-later'
      run.inFlight = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 60_000 }
    })

    const lateReceipt = makeReceipt('r1', 'op_late', { status: 'uncertain', result: { secret: 'of the earlier run' } })
    t.equal(await store.putReceipt(lateReceipt, 'acme', 'token-1', earlier.createdAt), lateReceipt, 'the late receipt is stored')
    t.same(await peer.listReceipts('r1'), [], 'but not listed in the later run')
    t.equal(await store.settleReceipt({ ...lateReceipt, status: 'committed' }, 'acme', 'token-1'), true, 'its dispatch settles it')
    t.same(await peer.listReceipts('r1'), [], 'still not listed once settled')
    t.same(await peer.getReceipt('op_late'), { receipt: { ...lateReceipt, status: 'committed' }, tenant: 'acme' }, 'reachable by operation id, with its own tenant')

    const answer = { batchId: 'b1', requestHash: 'hash-earlier', responseJson: '{"secret":"of the earlier run"}', completedAt: now() }
    t.equal(await store.completeBatch('r1', 'replica-a', (run) => { run.counters.turns = 99; return answer }, { tenant: 'acme', createdAt: earlier.createdAt }), false, 'the late answer is refused')
    t.equal((await peer.getRun('r1'))?.counters.turns, 0, 'its changes to the run are not made')
    t.equal(await peer.getBatch('r1', 'b1'), undefined, 'nothing is stored as the later run\'s answer')
    t.match(await peer.getRun('r1'), { tenant: 'beta', inFlight: { batchId: 'b1', owner: 'replica-a' } }, "the later run's lease stands")

    const own = makeReceipt('r1', 'op_own')
    await peer.putReceipt(own, 'beta', undefined, later.createdAt)
    t.same((await store.listReceipts('r1')).map((r) => r.operationId), ['op_own'], "the later run's own receipt is listed")
    const mine = { ...answer, requestHash: 'hash-later', responseJson: '{"ok":true}' }
    t.equal(await peer.completeBatch('r1', 'replica-a', mine, { tenant: 'beta', createdAt: later.createdAt }), true, "the later run's own answer is stored")
    t.equal((await store.getBatch('r1', 'b1'))?.responseJson, '{"ok":true}')
  })
}
