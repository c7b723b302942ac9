/**
 * The Store contract, run against the memory store and the Redis store alike.
 * Redis cases are skipped, saying why, when no Redis answers at
 * TOOLGATE_TEST_REDIS_URL (default redis://127.0.0.1:6379).
 */
import t, { type Test } from 'tap'
import { type BatchRecord, StoreFullError, type CancelReason } from '../../src/store/types.js'
import type { WaitingBatch } from '../../src/approvals/types.js'
import { type Harness, makeReceipt, makeRun, memoryHarness, redisHarness, redisUnavailable } from './harness.js'

const noRedis = await redisUnavailable()
if (noRedis !== undefined) t.comment(`Redis store contract skipped: ${noRedis}`)

for (const h of [memoryHarness, redisHarness]) {
  const skip = h.name === 'redis' && noRedis !== undefined ? noRedis : false
  t.test(`the ${h.name} store`, { skip }, async (t) => contract(t, h))
}

async function contract (t: Test, h: Harness): Promise<void> {
  // Every case has a store (and key prefix) of its own, so the ones that wait on real time overlap.
  t.jobs = 4
  t.test('a created run reads back as stored, and its id cannot be created twice', async (t) => {
    const { store, peer, now } = await h.open(t)
    const at = now()
    t.equal(await store.createRun(makeRun('r1', at)), true)
    t.equal(await peer.createRun(makeRun('r1', at, { tenant: 'other' })), false)
    t.same(await peer.getRun('r1'), makeRun('r1', at))
    t.equal(await store.getRun('nope'), undefined)
  })

  t.test('updateRun answers what fn returns and keeps its changes; a missing run is not found', async (t) => {
    const { store, peer, now, advance } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await advance(5)
    const result = await store.updateRun('r1', (run) => {
      run.counters.turns = 7
      return run.counters.turns * 2
    })
    t.same(result, { found: true, value: 14 })
    const read = await peer.getRun('r1')
    t.equal(read?.counters.turns, 7)
    t.ok(read!.lastActiveAt >= now() - 1000 && read!.lastActiveAt > read!.createdAt, 'the update marks the run used now')
    t.same(await store.updateRun('nope', () => 1), { found: false })
  })

  t.test('a throwing fn rejects with its own error and leaves the run unchanged', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const boom = new Error('decided against it')
    await t.rejects(store.updateRun('r1', () => { throw boom }), boom)
    t.equal((await peer.getRun('r1'))?.counters.turns, 0)
  })

  t.test('concurrent updates from two clients lose no increment', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const n = 40
    let ran = 0
    const increment = (s: typeof store) => s.updateRun('r1', (run) => {
      ran++
      run.counters.toolCalls += 1
      return run.counters.toolCalls
    })
    const results = await Promise.all(Array.from({ length: n }, (_, i) => increment(i % 2 === 0 ? store : peer)))
    const values = results.map((r) => (r.found ? r.value : -1)).sort((a, b) => a - b)
    t.same(values, Array.from({ length: n }, (_, i) => i + 1), 'every update saw a distinct value')
    t.equal((await store.getRun('r1'))?.counters.toolCalls, n)
    t.ok(ran >= n, 'fn ran at least once per update (again after a conflict)')
  })

  t.test('concurrent updates of a leased run from two clients lose no increment either', async (t) => {
    // A leased run is where a client may start from the version it wrote last instead of reading it.
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now(), { inFlight: { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 60_000 } }))
    await store.updateRun('r1', () => {})
    await peer.updateRun('r1', () => {})
    const n = 40
    const increment = (s: typeof store) => s.updateRun('r1', (run) => {
      run.counters.toolCalls += 1
      return run.counters.toolCalls
    })
    const results = await Promise.all(Array.from({ length: n }, (_, i) => increment(i % 3 === 0 ? store : peer)))
    const values = results.map((r) => (r.found ? r.value : -1)).sort((a, b) => a - b)
    t.same(values, Array.from({ length: n }, (_, i) => i + 1), 'every update saw a distinct value')
    for (let i = 0; i < 10; i++) await increment(i % 2 === 0 ? store : peer)
    t.equal((await store.getRun('r1'))?.counters.toolCalls, n + 10, 'taking turns, each client starting from a copy the other made out of date')
  })

  t.test('an idle run expires runTtl after its last use, and each update restarts that', async (t) => {
    const ttl = h.ttl.long
    const { store, peer, now, advance } = await h.open(t, { runTtlMs: ttl })
    await store.createRun(makeRun('r1', now()))
    await advance(ttl * 0.5)
    t.equal((await store.updateRun('r1', () => true)).found, true)
    await advance(ttl * 0.7)
    t.ok(await peer.getRun('r1'), 'still there: used less than runTtl ago')
    await advance(ttl * 0.6)
    t.equal(await peer.getRun('r1'), undefined, 'gone after runTtl idle')
    t.same(await store.updateRun('r1', () => true), { found: false })
    t.equal(await store.createRun(makeRun('r1', now())), true, 'its id is free again')
  })

  t.test('an expired run takes its batch ids with it: a new run of the same id knows none', async (t) => {
    const ttl = h.ttl.short
    const { store, peer, now, advance } = await h.open(t, { runTtlMs: ttl })
    await store.createRun(makeRun('r1', now()))
    await store.updateRunWithBatchId('r1', 'b1', (_run, entry) => { entry.requestHash = 'hash1' })
    await advance(ttl * 1.5)
    t.equal(await store.createRun(makeRun('r1', now())), true)
    t.same(await peer.updateRunWithBatchId('r1', 'b1', (_run, entry) => entry.requestHash), { found: true, value: undefined })
  })

  t.test('a run whose batch holds a valid lease does not expire', async (t) => {
    const ttl = h.ttl.short
    const { store, peer, now, advance } = await h.open(t, { runTtlMs: ttl })
    await store.createRun(makeRun('r1', now()))
    await store.updateRun('r1', (run) => { run.inFlight = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 60_000 } })
    await advance(ttl * 2)
    t.ok(await peer.getRun('r1'), 'kept while its batch is in flight')
    await store.updateRun('r1', (run) => { run.inFlight = null })
    await advance(ttl * 1.5)
    t.equal(await peer.getRun('r1'), undefined, 'expires once the lease is released and the run idles')
  })

  t.test('updateRunWithBatchId records a batch id in the same step as the run, and any client sees it reused; an id never recorded is unknown', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.createRun(makeRun('r2', now()))
    const begun = await store.updateRunWithBatchId('r1', 'b1', (run, entry) => {
      const seen = entry.requestHash
      entry.requestHash = 'hash1'
      run.inFlight = { batchId: entry.batchId, owner: 'replica-a', leaseExpiresAt: now() + 60_000 }
      return seen
    })
    t.same(begun, { found: true, value: undefined }, 'a new batch id is unknown')
    const again = await peer.updateRunWithBatchId('r1', 'b1', (run, entry) => ({ batchId: entry.batchId, requestHash: entry.requestHash, lease: run.inFlight?.batchId }))
    t.same(again, { found: true, value: { batchId: 'b1', requestHash: 'hash1', lease: 'b1' } }, 'another client sees the id with its hash, and the lease taken with it')
    t.same(await peer.updateRunWithBatchId('r1', 'b2', (_run, entry) => entry.requestHash), { found: true, value: undefined }, 'another batch id is unknown')
    t.same(await peer.updateRunWithBatchId('r2', 'b1', (_run, entry) => entry.requestHash), { found: true, value: undefined }, 'batch ids are per run')
    t.same(await store.updateRunWithBatchId('nope', 'b1', () => 1), { found: false })
  })

  t.test('a throwing fn records no batch id', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const boom = new Error('decided against it')
    await t.rejects(store.updateRunWithBatchId('r1', 'b1', (_run, entry) => {
      entry.requestHash = 'hash1'
      throw boom
    }), boom)
    t.same(await peer.updateRunWithBatchId('r1', 'b1', (_run, entry) => entry.requestHash), { found: true, value: undefined })
  })

  t.test('the same new batch id recorded by two clients at once is new to exactly one of them', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const begin = (s: typeof store, i: number) => s.updateRunWithBatchId('r1', 'b1', (run, entry) => {
      if (entry.requestHash !== undefined) return `known ${entry.requestHash}`
      entry.requestHash = `hash${i}`
      run.counters.turns++
      return 'recorded'
    })
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => begin(i % 2 === 0 ? store : peer, i)))
    const answers = results.map((r) => (r.found ? r.value : 'gone'))
    t.equal(answers.filter((a) => a === 'recorded').length, 1, 'one recorded it')
    t.equal(new Set(answers.filter((a) => a !== 'recorded')).size, 1, 'every other saw the one hash recorded')
    t.equal((await store.getRun('r1'))?.counters.turns, 1, 'and the run counted it once')
  })

  t.test('endRun ends the run, frees its repeat streak, batch ids and batch records, and keeps its receipts', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.updateRunWithBatchId('r1', 'b1', (run, entry) => {
      run.repeat = { fingerprint: 'abc', count: 3, advised: true }
      entry.requestHash = 'hash1'
      run.inFlight = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 60_000 }
    })
    t.equal(await store.completeBatch('r1', 'replica-a', { batchId: 'b1', requestHash: 'hash1', responseJson: '{"ok":1}', completedAt: now() }), true)
    await store.putReceipt(makeReceipt('r1', 'op_1'), 'acme')

    const ended = await peer.endRun('r1', now())
    t.equal(ended?.state, 'ended')
    t.equal(ended?.terminationReason, 'ended')
    t.same(ended?.repeat, { fingerprint: null, count: 0, advised: false })
    const read = await store.getRun('r1')
    t.equal(read?.state, 'ended', 'the small record stays, answering ended')
    t.equal(await store.getBatch('r1', 'b1'), undefined, 'batch records are freed')
    t.same((await store.listReceipts('r1')).map((r) => r.operationId), ['op_1'], 'receipts stay')
    t.same(await store.updateRunWithBatchId('r1', 'b1', (_run, entry) => entry.requestHash), { found: true, value: undefined }, 'no batch ids left')
    t.equal(await store.endRun('nope', now()), undefined)
  })

  t.test('the loop state is kept with the run as written, read back by another client, and freed when the run ends', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const loops = {
      cycle: { recent: [{ fingerprint: 'a'.repeat(64), tool: 'look' }, { fingerprint: 'b'.repeat(64), tool: 'move' }], periods: [{ matched: 3, advised: true }, { matched: 0, advised: false }] },
      errors: { count: 2, advised: false, tools: ['fail', 'nosuch'] },
      noProgress: { key: `${'c'.repeat(64)}:hash`, tool: 'status', count: 9, advised: false },
      resets: 1
    }
    await store.updateRun('r1', (run) => {
      run.loops = structuredClone(loops)
      run.admitted = { batchId: 'b1', repeat: run.repeat, toolCalls: 0, loops: structuredClone(loops) }
    })
    t.same((await peer.getRun('r1'))?.loops, loops)
    t.same((await peer.getRun('r1'))?.admitted?.loops, loops)
    const ended = await peer.endRun('r1', now())
    t.equal(ended?.loops, undefined, 'the loop streaks are freed')
    t.equal((await store.getRun('r1'))?.loops, undefined)
    t.equal((await store.getRun('r1'))?.admitted, null)
  })

  t.test('batch records are kept with their run and only while it exists', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const record = { batchId: 'b1', requestHash: 'h', responseJson: JSON.stringify({ runId: 'r1', results: [{ callId: 'c1', status: 'ok' }] }), completedAt: now() }
    await store.updateRun('r1', (run) => { run.inFlight = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 60_000 } })
    t.equal(await store.completeBatch('r1', 'replica-a', record), true)
    await store.updateRun('r1', (run) => { run.counters.turns++ })
    t.same(await peer.getBatch('r1', 'b1'), record)
    t.equal(await peer.getBatch('r1', 'b2'), undefined)
    t.equal(await store.completeBatch('ghost', 'replica-a', { ...record, batchId: 'b9' }), false)
    t.equal(await peer.getBatch('ghost', 'b9'), undefined, 'no record for a run that does not exist')
    t.equal(await peer.getRun('ghost'), undefined, 'nor a run')
  })

  t.test('a stored answer comes back exactly as written, whatever characters it holds', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    // Non-ASCII text, an astral character, and a lone surrogate as JSON.stringify escapes it.
    const responseJson = JSON.stringify({ runId: 'r1', results: [{ content: 'héllo — 漢字 😀 \ud800 "quoted"' }], lone: '\ud83d' })
    const record = { batchId: 'b1', requestHash: 'h', responseJson, completedAt: now() }
    await store.updateRun('r1', (run) => { run.inFlight = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 60_000 } })
    t.equal(await store.completeBatch('r1', 'replica-a', record), true)
    const stored = await peer.getBatch('r1', 'b1')
    t.equal(stored?.responseJson, responseJson, 'byte for byte')
    t.same(stored, record)
  })

  t.test('completeBatch stores the answer and releases the lease only for the batch and replica that hold it', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.updateRun('r1', (run) => { run.inFlight = { batchId: 'b2', owner: 'replica-b', leaseExpiresAt: now() + 60_000 } })
    const at = now()
    const answer = (batchId: string, by: string): BatchRecord => ({ batchId, requestHash: 'h', responseJson: `{"batchId":"${batchId}","by":"${by}"}`, completedAt: at })
    t.equal(await store.completeBatch('r1', 'replica-b', answer('b1', 'b')), false, 'another batch of the run stores nothing')
    t.equal(await store.getBatch('r1', 'b1'), undefined)
    t.equal(await store.completeBatch('r1', 'replica-a', answer('b2', 'a')), false, 'the same batch from a replica whose lease was taken over stores nothing')
    t.equal((await peer.getRun('r1'))?.inFlight?.owner, 'replica-b', 'and leaves the holder\'s lease alone')
    t.equal(await peer.completeBatch('r1', 'replica-b', answer('b2', 'b')), true, 'the holder stores')
    t.equal((await store.getRun('r1'))?.inFlight, null, 'the lease is released')
    t.same(await store.getBatch('r1', 'b2'), answer('b2', 'b'), 'as the answer is stored')
    t.equal(await store.completeBatch('r1', 'replica-a', answer('b2', 'a')), false, 'a late completion after the release stores nothing')
    t.same(await peer.getBatch('r1', 'b2'), answer('b2', 'b'), 'the stored answer is never replaced')
  })

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

  t.test('a published cancel reaches every listener once, from this client or another', async (t) => {
    const { store, peer, subscribed } = await h.open(t)
    const heard: Array<[string, CancelReason]> = []
    let notify: () => void = () => {}
    const stop = store.onCancel((runId, reason) => {
      heard.push([runId, reason])
      notify()
    })
    await subscribed()
    await store.publishCancel('r1', 'cancelled')
    t.same(heard, [['r1', 'cancelled']], 'the publishing client hears its own cancel before publishCancel settles')
    const arrived = new Promise<void>((resolve) => { notify = resolve })
    await peer.publishCancel('r2', 'ended')
    await arrived
    // Give a duplicate delivery time to show up before counting.
    await new Promise((resolve) => setTimeout(resolve, 100))
    t.same(heard, [['r1', 'cancelled'], ['r2', 'ended']])
    stop()
    await store.publishCancel('r3', 'cancelled')
    t.equal(heard.length, 2, 'an unsubscribed listener hears nothing more')
  })

  t.test('waitingRuns lists the runs whose record holds a waiting batch, in step with every update; ending a run drops its batch', async (t) => {
    const { store, peer, now } = await h.open(t)
    const at = now()
    for (const id of ['r1', 'r2', 'r3']) await store.createRun(makeRun(id, at))
    t.same(await peer.waitingRuns(), [])
    const waiting = (batchId: string): WaitingBatch => ({
      batchId, requestHash: 'h', turn: 1, phase: 'awaiting', scopes: [], requestedAt: at, expiresAt: at + 60_000,
      calls: [{ id: 'c1', name: 'mail' }], outcomes: [{ ok: true, tool: 'mail', arguments: { to: 'ü' }, held: true, conflictKey: null }], events: []
    })
    await store.updateRun('r1', (run) => { run.waiting = waiting('b1'); run.inFlight = { batchId: 'b1', owner: 'approval', leaseExpiresAt: at + 120_000 } })
    await peer.updateRun('r2', (run) => { run.waiting = waiting('b2') })
    const listed = await store.waitingRuns()
    t.same(listed.map((r) => [r.runId, r.waiting?.batchId]).sort(), [['r1', 'b1'], ['r2', 'b2']])
    t.same(listed.find((r) => r.runId === 'r1')?.waiting, waiting('b1'), 'the waiting batch reads back whole')
    await peer.updateRun('r2', (run) => { run.counters.turns++ })
    t.equal((await store.waitingRuns()).length, 2, 'an update that keeps it keeps the run listed')
    await store.updateRun('r2', (run) => { run.waiting = null })
    t.same((await peer.waitingRuns()).map((r) => r.runId), ['r1'])
    await t.rejects(store.updateRun('r1', () => { throw new Error('no') }))
    t.same((await peer.waitingRuns()).map((r) => r.runId), ['r1'], 'a throwing update changes nothing')
    const ended = await store.endRun('r1', now())
    t.equal(ended?.waiting ?? null, null)
    t.equal(ended?.inFlight, null, 'no replica held the lease of the waiting batch')
    t.same(await peer.waitingRuns(), [])
  })

  t.test('the store is ready', async (t) => {
    const { store } = await h.open(t)
    t.equal(await store.ready(), true)
  })
}
