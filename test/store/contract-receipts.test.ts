/**
 * The ReceiptJournal contract (src/store/receipt-journal.ts): the first
 * writer wins, pending receipts settle in place, and receipts outlive their
 * run by the retention time.
 */
import type { Test } from 'tap'
import { type Harness, againstEveryStore, makeReceipt, makeRun } from './harness.js'

await againstEveryStore('ReceiptJournal contract', contract)

async function contract (t: Test, h: Harness): Promise<void> {
  // Every case has a store (and key prefix) of its own, so the ones that wait on real time overlap.
  t.jobs = 4
  t.test('receipts: the first writer wins, the tenant is kept, and each run lists its own in order', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.createRun(makeRun('r2', now()))
    const first = makeReceipt('r1', 'op_1')
    t.same(await store.putReceipt(first, 'acme'), first)
    t.same(await peer.putReceipt(makeReceipt('r1', 'op_1', { status: 'uncertain', result: null }), 'other'), first, 'a second writer gets the stored receipt')
    await peer.putReceipt(makeReceipt('r1', 'op_2'), 'acme')
    await store.putReceipt(makeReceipt('r2', 'op_3'), 'beta')

    t.same(await peer.getReceipt('op_1'), { receipt: first, tenant: 'acme' })
    t.same(await store.getReceipt('op_3'), { receipt: makeReceipt('r2', 'op_3'), tenant: 'beta' })
    t.equal(await store.getReceipt('op_none'), undefined)
    t.same((await store.listReceipts('r1')).map((r) => r.operationId), ['op_1', 'op_2'])
    t.same((await peer.listReceipts('r2')).map((r) => r.operationId), ['op_3'])
    t.same(await store.listReceipts('r9'), [])
  })

  t.test('a pending receipt is replaced in place by its final one: one journal entry, read back by another client', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const pending = makeReceipt('r1', 'op_1', { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'no_answer_recorded' } })
    t.equal(await store.putReceipt(pending, 'acme', 'dispatch-1'), pending, 'the first writer is answered its own receipt')
    await store.putReceipt(makeReceipt('r1', 'op_2'), 'acme')
    t.same(await peer.getReceipt('op_1'), { receipt: pending, tenant: 'acme' }, 'the pending receipt reads back, without its token')
    const final = makeReceipt('r1', 'op_1')
    t.equal(await store.settleReceipt(final, 'acme', 'dispatch-1'), true)
    t.same(await peer.getReceipt('op_1'), { receipt: final, tenant: 'acme' })
    t.same(await peer.listReceipts('r1'), [final, makeReceipt('r1', 'op_2')], "listed once, in the pending receipt's place")
  })

  t.test("a final receipt replaces only its own dispatch's pending receipt, never a final one", async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const pending = makeReceipt('r1', 'op_1', { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'no_answer_recorded' } })
    await store.putReceipt(pending, 'acme', 'dispatch-1')
    t.equal(await peer.settleReceipt(makeReceipt('r1', 'op_1', { result: { label: 'other' } }), 'acme', 'dispatch-2'), false, "another dispatch's token replaces nothing")
    t.same((await store.getReceipt('op_1'))?.receipt, pending)
    const final = makeReceipt('r1', 'op_1')
    t.equal(await peer.settleReceipt(final, 'acme', 'dispatch-1'), true)
    t.equal(await store.settleReceipt(makeReceipt('r1', 'op_1', { status: 'failed' }), 'acme', 'dispatch-1'), false, 'once settled, not even its own token replaces it')
    t.same((await peer.getReceipt('op_1'))?.receipt, final)

    const direct = makeReceipt('r1', 'op_2')
    await store.putReceipt(direct, 'acme')
    t.equal(await peer.settleReceipt(makeReceipt('r1', 'op_2', { status: 'failed' }), 'acme', ''), false, 'a receipt stored without a token is final from the start')
    t.same((await peer.getReceipt('op_2'))?.receipt, direct)
    t.equal(await store.settleReceipt(makeReceipt('r1', 'op_3'), 'acme', 'dispatch-3'), false, 'nor is a receipt never stored put in')
    t.equal(await peer.getReceipt('op_3'), undefined)
    t.same((await peer.listReceipts('r1')).map((r) => r.operationId), ['op_1', 'op_2'])
  })

  t.test('of two pending receipts of one operation the first writer wins, and only its token settles it', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const mine = makeReceipt('r1', 'op_1', { batchId: 'b1', status: 'uncertain', result: null })
    const theirs = makeReceipt('r1', 'op_1', { batchId: 'b2', status: 'uncertain', result: null })
    const [a, b] = await Promise.all([store.putReceipt(mine, 'acme', 'dispatch-a'), peer.putReceipt(theirs, 'acme', 'dispatch-b')])
    const aWon = a === mine
    t.equal(aWon, b !== theirs, 'exactly one writer stored its own receipt')
    const [winner, won, lost] = aWon ? [mine, 'dispatch-a', 'dispatch-b'] : [theirs, 'dispatch-b', 'dispatch-a']
    t.same([a, b], [winner, winner], 'both are answered the stored one')
    const final = makeReceipt('r1', 'op_1')
    t.equal(await store.settleReceipt(final, 'acme', lost), false, "the other dispatch's token settles nothing")
    t.equal(await peer.settleReceipt(final, 'acme', won), true)
    t.same(await store.listReceipts('r1'), [final])
  })

  t.test('a settled receipt keeps the retention of the pending one it replaced', async (t) => {
    const ttl = h.ttl.short
    const retention = h.ttl.long
    const { store, peer, now, advance } = await h.open(t, { runTtlMs: ttl, receiptRetentionMs: retention })
    await store.createRun(makeRun('r1', now()))
    await store.putReceipt(makeReceipt('r1', 'op_1', { status: 'uncertain', result: null }), 'acme', 'dispatch-1')
    await advance(ttl * 1.2)
    t.equal(await store.getRun('r1'), undefined, 'the run is gone')
    t.equal(await store.settleReceipt(makeReceipt('r1', 'op_1'), 'acme', 'dispatch-1'), true)
    await advance(retention * 0.3)
    t.equal((await peer.getReceipt('op_1'))?.receipt.status, 'committed', 'the final receipt is kept')
    await advance(retention)
    t.equal(await peer.getReceipt('op_1'), undefined, 'and dropped when the pending one would have been')
    t.same(await peer.listReceipts('r1'), [])
  })

  t.test('receipts outlive their run by the retention time, then go', async (t) => {
    const ttl = h.ttl.short
    const retention = h.ttl.long
    const { store, peer, now, advance } = await h.open(t, { runTtlMs: ttl, receiptRetentionMs: retention })
    await store.createRun(makeRun('r1', now()))
    await store.putReceipt(makeReceipt('r1', 'op_1'), 'acme')
    await advance(ttl * 1.2)
    t.equal(await store.getRun('r1'), undefined, 'the run is gone')
    await advance(retention * 0.3)
    t.same((await peer.getReceipt('op_1'))?.tenant, 'acme', 'its receipt is kept')
    t.same((await peer.listReceipts('r1')).map((r) => r.operationId), ['op_1'])
    await advance(retention)
    t.equal(await peer.getReceipt('op_1'), undefined, 'and dropped after the retention time')
    t.same(await peer.listReceipts('r1'), [])
  })
}
