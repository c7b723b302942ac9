/**
 * The memory journal's bound on bytes (src/store/memory-receipts.ts): over
 * it, the tenant holding the most gives up its oldest receipts first, so a
 * tenant of large receipts cannot push out another's, nor grow the heap
 * without end.
 */
import t from 'tap'
import { MemoryReceiptJournal } from '../../src/store/memory-receipts.js'
import type { Receipt } from '../../src/model/receipt.js'

function receipt (runId: string, operationId: string, size: number): Receipt {
  return { operationId, runId, batchId: 'b', callId: operationId, tool: 'act', intent: { action: 'note' }, status: 'committed', result: { blob: 'x'.repeat(size) } } as unknown as Receipt
}

function journal (maxReceiptBytes: number): MemoryReceiptJournal {
  return new MemoryReceiptJournal({ receiptRetentionMs: 60_000, maxReceipts: 1_000_000, maxReceiptBytes, now: () => 0, runHeld: () => true })
}

t.test('a tenant of large receipts gives up its own oldest; another tenant keeps every one of its own', async (t) => {
  const j = journal(100_000)
  for (let i = 0; i < 5; i++) await j.putReceipt(receipt('quiet-run', `q${i}`, 1_000), 'quiet')
  for (let i = 0; i < 50; i++) await j.putReceipt(receipt('loud-run', `l${i}`, 20_000), 'loud')
  t.ok(j.bytes <= 100_000, `held ${j.bytes} bytes, within the bound`)
  for (let i = 0; i < 5; i++) t.ok(await j.getReceipt(`q${i}`), `the other tenant's receipt q${i} is kept`)
  t.ok(await j.getReceipt('l49'), 'the loud tenant\'s newest is kept')
  t.equal(await j.getReceipt('l0'), undefined, 'its oldest went first')
  t.same((await j.listReceipts('loud-run')).map((r) => r.operationId).at(-1), 'l49')
})

t.test('a settled or revised receipt is counted at its new size', async (t) => {
  const j = journal(50_000)
  await j.putReceipt(receipt('r', 'a', 10), 't', 'token')
  const small = j.bytes
  t.equal(await j.settleReceipt(receipt('r', 'a', 30_000), 't', 'token'), true)
  t.ok(j.bytes > small + 29_000, 'the final receipt\'s size')
  await j.reviseReceipt('a', () => receipt('r', 'a', 100))
  t.ok(j.bytes < 1_000, 'the revised receipt\'s size')
  await j.putReceipt(receipt('r', 'b', 45_000), 't')
  await j.putReceipt(receipt('r', 'c', 45_000), 't')
  t.equal(await j.getReceipt('a'), undefined)
  t.equal(await j.getReceipt('b'), undefined, 'the oldest go until it fits')
  t.ok(await j.getReceipt('c'))
})

t.test('a receipt larger than the whole bound is kept until the next one comes', async (t) => {
  const j = journal(10_000)
  await j.putReceipt(receipt('r', 'huge', 50_000), 't')
  t.ok(await j.getReceipt('huge'), 'the one just written stays')
  await j.putReceipt(receipt('r', 'next', 10), 't')
  t.equal(await j.getReceipt('huge'), undefined)
  t.ok(await j.getReceipt('next'))
  t.ok(j.bytes < 10_000)
})

t.test('dropped receipts give their bytes back', async (t) => {
  const j = journal(1_000_000)
  await j.putReceipt(receipt('gone', 'x', 5_000), 't')
  j.orphan('gone', 0)
  t.ok(j.bytes > 5_000)
  let now = 100
  const later = new MemoryReceiptJournal({ receiptRetentionMs: 10, maxReceipts: 10, maxReceiptBytes: 1_000_000, now: () => now, runHeld: () => false })
  await later.putReceipt(receipt('gone', 'y', 5_000), 't')
  now = 200
  later.sweep()
  t.equal(later.bytes, 0, 'swept past retention: nothing counted')
})
