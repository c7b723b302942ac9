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

await againstEveryStore('run incarnations', contract)

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
