/**
 * The BatchAnswers contract (src/store/batch-answers.ts): an answer stored
 * by the run state's completeBatch reads back, exactly, only while its run
 * exists. The listing of a run's answers is in listing.test.ts.
 */
import type { Test } from 'tap'
import { type Harness, againstEveryStore, makeRun } from './harness.js'

await againstEveryStore('BatchAnswers contract', contract)

async function contract (t: Test, h: Harness): Promise<void> {
  // Every case has a store (and key prefix) of its own, so the ones that wait on real time overlap.
  t.jobs = 2
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
}
