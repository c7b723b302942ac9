/**
 * The RunStateStore contract (src/store/run-state.ts): run records, their
 * atomic updates with batch ids, leases and waiting batches, ending and
 * expiry, completeBatch's release of the lease with the answer, and
 * recordBatch's answer of a batch that never held it.
 */
import type { Test } from 'tap'
import type { BatchRecord } from '../../src/store/types.js'
import type { WaitingBatch } from '../../src/model/waiting.js'
import { type Harness, againstEveryStore, makeReceipt, makeRun } from './harness.js'

await againstEveryStore('RunStateStore contract', contract)

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

  t.test("endRun ends the run, runs the rules' reset on it in the same step (the repeat streak freed), frees its batch ids and batch records, and keeps its receipts", async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.updateRunWithBatchId('r1', 'b1', (run, entry) => {
      run.repeat = { fingerprint: 'abc', count: 3, advised: true }
      entry.requestHash = 'hash1'
      run.inFlight = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 60_000 }
    })
    t.equal(await store.completeBatch('r1', 'replica-a', { batchId: 'b1', requestHash: 'hash1', responseJson: '{"ok":1}', completedAt: now() }), true)
    await store.putReceipt(makeReceipt('r1', 'op_1'), 'acme')

    const ended = await peer.endRun('r1', now(), (run) => {
      t.equal(run.state, 'ended', 'the reset sees the run ended')
      run.repeat = { fingerprint: null, count: 0, advised: false }
    })
    t.equal(ended?.state, 'ended')
    t.equal(ended?.terminationReason, 'ended')
    t.same(ended?.repeat, { fingerprint: null, count: 0, advised: false })
    t.same((await store.getRun('r1'))?.repeat, { fingerprint: null, count: 0, advised: false }, 'as stored')
    const read = await store.getRun('r1')
    t.equal(read?.state, 'ended', 'the small record stays, answering ended')
    t.equal(await store.getBatch('r1', 'b1'), undefined, 'batch records are freed')
    t.same((await store.listReceipts('r1')).map((r) => r.operationId), ['op_1'], 'receipts stay')
    t.same(await store.updateRunWithBatchId('r1', 'b1', (_run, entry) => entry.requestHash), { found: true, value: undefined }, 'no batch ids left')
    t.equal(await store.endRun('nope', now()), undefined)
  })

  t.test("the loop state is kept with the run as written, read back by another client, and freed by the rules' reset when the run ends", async (t) => {
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
    const ended = await peer.endRun('r1', now(), (run) => { delete run.loops })
    t.equal(ended?.loops, undefined, 'the loop streaks are freed')
    t.equal((await store.getRun('r1'))?.loops, undefined)
    t.equal((await store.getRun('r1'))?.admitted, null)
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

  t.test('recordBatch records a batch id and its answer with the run in one step, leaving the lease another batch holds alone', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const lease = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now() + 60_000 }
    await store.updateRun('r1', (run) => { run.inFlight = { ...lease } })
    const answer: BatchRecord = { batchId: 'm1', requestHash: 'hm1', responseJson: '{"batchId":"m1","results":[]}', completedAt: now(), summary: { turn: 1, calls: 1, statuses: { cancelled: 1 } } }
    let seen: string | undefined = 'not asked'
    t.equal(await store.recordBatch('r1', 'm1', (run, recorded) => {
      seen = recorded
      run.counters.turns++
      return answer
    }), true)
    t.equal(seen, undefined, 'a new batch id is unknown')
    t.same(await peer.getBatch('r1', 'm1'), answer, 'the answer is stored')
    t.same((await peer.listBatches('r1')).map((b) => b.batchId), ['m1'], 'and listed')
    const run = await peer.getRun('r1')
    t.equal(run?.counters.turns, 1, "fn's changes are kept")
    t.same(run?.inFlight, lease, 'the lease is left to the batch holding it')
    t.same(await peer.updateRunWithBatchId('r1', 'm1', (_run, entry) => entry.requestHash), { found: true, value: 'hm1' }, 'the id is recorded with the answer\'s hash')
    t.equal(await peer.recordBatch('r1', 'm1', (_run, recorded) => {
      seen = recorded
      return recorded === undefined ? { ...answer, responseJson: '{"again":true}' } : undefined
    }), false, 'fn answering nothing stores nothing')
    t.equal(seen, 'hm1', 'a recorded id is known to any client')
    t.same(await store.getBatch('r1', 'm1'), answer, 'the stored answer is never replaced')
    t.equal(await store.recordBatch('r1', 'm2', () => undefined), false)
    t.same(await peer.updateRunWithBatchId('r1', 'm2', (_run, entry) => entry.requestHash), { found: true, value: undefined }, 'an id answered nothing for stays unknown')
    t.equal(await store.recordBatch('nope', 'm1', () => answer), false, 'a run that is not there')
    t.equal(await peer.completeBatch('r1', 'replica-a', { batchId: 'b1', requestHash: 'h', responseJson: '{}', completedAt: now() }), true, 'the batch holding the lease completes as ever')
    t.equal((await store.getRun('r1'))?.inFlight, null)
  })

  t.test('a throwing recordBatch fn records nothing and leaves the run unchanged', async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const boom = new Error('decided against it')
    await t.rejects(store.recordBatch('r1', 'm1', () => { throw boom }), boom)
    t.equal(await peer.getBatch('r1', 'm1'), undefined)
    t.same(await peer.updateRunWithBatchId('r1', 'm1', (_run, entry) => entry.requestHash), { found: true, value: undefined })
  })

  t.test('waitingRuns lists the runs whose record holds a waiting batch, in step with every update; ending a run drops its batch', async (t) => {
    const { store, peer, now } = await h.open(t)
    const at = now()
    for (const id of ['r1', 'r2', 'r3']) await store.createRun(makeRun(id, at))
    t.same(await peer.waitingRuns(), [])
    const waiting = (batchId: string): WaitingBatch => ({
      phase: 'awaiting', requestHash: 'h', requestedAt: at, expiresAt: at + 60_000,
      state: {
        batchId, turn: 1, scopes: [], calls: [{ id: 'c1', name: 'mail' }],
        outcomes: [{ ok: true, tool: 'mail', arguments: { to: 'ü' }, conflictKey: null }], approvals: { held: [{}], events: [] }
      }
    })
    await store.updateRun('r1', (run) => { run.waiting = waiting('b1'); run.inFlight = { batchId: 'b1', owner: 'approval', leaseExpiresAt: at + 120_000 } })
    await peer.updateRun('r2', (run) => { run.waiting = waiting('b2') })
    const listed = await store.waitingRuns()
    t.same(listed.map((r) => [r.runId, r.waiting?.state.batchId]).sort(), [['r1', 'b1'], ['r2', 'b2']])
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

  t.test('a waiting batch an earlier version stored, its fields beside waiting\'s own, is read in the current form by every read', async (t) => {
    const { store, peer, now } = await h.open(t)
    const at = now()
    await store.createRun(makeRun('r1', at))
    const event = { seq: 1, at: new Date(at).toISOString(), type: 'call.awaiting_approval', callId: 'c1', tool: 'mail' }
    const decision = { approve: true, by: { tenant: 'acme' }, at }
    // Literally as an earlier version wrote it: approvals on each outcome.
    const earlier = {
      batchId: 'b1', requestHash: 'h', turn: 3, phase: 'awaiting', scopes: ['tools:mail'], format: 'openai-chat', requestedAt: at, expiresAt: at + 60_000,
      calls: [{ id: 'c1', name: 'mail' }, { id: 'c2', name: 'look', generatedId: true as const }, { id: 'c3', name: 'nope' }, { id: 'c4', name: 'pay' }],
      outcomes: [
        { ok: true, tool: 'mail', arguments: { to: 'ü' }, held: true, conflictKey: 'to:ü', retryOf: 'op-1' },
        { ok: true, tool: 'look', arguments: {}, held: false, conflictKey: null },
        { ok: false, tool: null, reason: 'unknown_tool', message: 'no tool nope', arguments: { x: 1 } },
        { ok: true, tool: 'pay', arguments: { n: 2 }, held: true, conflictKey: null, decision }
      ],
      events: [event]
    }
    await store.updateRun('r1', (run) => {
      (run as { waiting: unknown }).waiting = earlier
      run.inFlight = { batchId: 'b1', owner: 'approval', leaseExpiresAt: at + 120_000 }
    })
    const current: WaitingBatch = {
      phase: 'awaiting', requestHash: 'h', requestedAt: at, expiresAt: at + 60_000,
      state: {
        batchId: 'b1', turn: 3, scopes: ['tools:mail'], format: 'openai-chat', calls: earlier.calls,
        outcomes: [
          { ok: true, tool: 'mail', arguments: { to: 'ü' }, conflictKey: 'to:ü' },
          { ok: true, tool: 'look', arguments: {}, conflictKey: null },
          { ok: false, tool: null, reason: 'unknown_tool', message: 'no tool nope', arguments: { x: 1 } },
          { ok: true, tool: 'pay', arguments: { n: 2 }, conflictKey: null }
        ],
        approvals: { held: [{ retryOf: 'op-1' }, null, null, { decision }], events: [event as WaitingBatch['state']['approvals']['events'][number]] }
      }
    }
    t.strictSame((await peer.getRun('r1'))?.waiting, current, 'getRun reads it in the current form')
    t.strictSame((await store.waitingRuns()).map((r) => r.waiting), [current], 'and so does waitingRuns')
    const seen = await peer.updateRun('r1', (run) => structuredClone(run.waiting))
    t.strictSame(seen.found && seen.value, current, 'and so does an update')
    t.strictSame((await store.getRun('r1'))?.waiting, current, 'which leaves it in that form')
  })
}
