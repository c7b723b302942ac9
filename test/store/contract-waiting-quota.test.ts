/**
 * The quota of runs with a waiting batch per tenant (SPEC section 19), in
 * every store: checked and counted in the run's own atomic update, so
 * updates racing (on Redis, from two replicas) never pass it together, and
 * a refused update writes nothing.
 */
import type { Test } from 'tap'
import type { RunRecord } from '../../src/model/run.js'
import { TenantWaitingQuotaError } from '../../src/store/types.js'
import type { WaitingBatch } from '../../src/model/waiting.js'
import { type Harness, againstEveryStore, makeRun } from './harness.js'

await againstEveryStore('waiting-batch quota', contract)

/** Inside an update: the run holds a waiting batch, as the hold phase leaves it. */
function hold (run: RunRecord, now: number): void {
  run.waiting = { phase: 'awaiting', expiresAt: now + 60_000, state: { batchId: 'b1' } } as unknown as WaitingBatch
  run.inFlight = { batchId: 'b1', owner: 'waiting', leaseExpiresAt: now + 60_000 }
}

async function contract (t: Test, h: Harness): Promise<void> {
  t.test('updates racing to make runs wait: exactly the quota passes, the others write nothing', async (t) => {
    const { store, peer, now } = await h.open(t, { maxWaitingPerTenant: 3 })
    const ids = Array.from({ length: 10 }, (_, i) => `w${i}`)
    for (const id of ids) await store.createRun(makeRun(id, now(), { tenant: 'acme' }))
    await store.createRun(makeRun('other', now(), { tenant: 'beta' }))
    // Half from each client: on Redis, two replicas.
    const outcomes = await Promise.allSettled(ids.map((id, i) => (i % 2 === 0 ? store : peer).updateRun(id, (run) => { hold(run, now()); run.counters.turns = 7 })))
    const passed = outcomes.filter((o) => o.status === 'fulfilled')
    const refused = outcomes.flatMap((o) => o.status === 'rejected' ? [o.reason] : [])
    t.equal(passed.length, 3, 'the quota passed')
    t.equal(refused.length, 7)
    t.ok(refused.every((e) => e instanceof TenantWaitingQuotaError && e.max === 3), 'the others are refused with the quota')
    const runs = await Promise.all(ids.map((id) => peer.getRun(id)))
    t.equal(runs.filter((r) => r?.waiting != null).length, 3, 'three runs wait')
    t.ok(runs.filter((r) => r?.waiting == null).every((r) => r !== undefined && r.counters.turns === 0 && r.inFlight === null), 'a refused update changed nothing')
    t.equal((await store.waitingRuns()).length, 3)

    await store.updateRun('other', (run) => hold(run, now()))
    t.equal((await peer.getRun('other'))?.waiting?.state.batchId, 'b1', "another tenant's run waits as before")
    const waiting = runs.find((r) => r?.waiting != null)!
    await peer.updateRun(waiting.runId, (run) => hold(run, now()))
    t.pass('a run that waits already is updated as before')

    // One stops waiting: one more may wait.
    await peer.updateRun(waiting.runId, (run) => { run.waiting = null; run.inFlight = null })
    const next = runs.find((r) => r?.waiting == null)!.runId
    await store.updateRun(next, (run) => hold(run, now()))
    await t.rejects(peer.updateRun(runs.filter((r) => r?.waiting == null && r?.runId !== next)[0]!.runId, (run) => hold(run, now())), TenantWaitingQuotaError)
  })

  t.test('a waiting run that ended no longer counts', async (t) => {
    const { store, peer, now } = await h.open(t, { maxWaitingPerTenant: 1, maxRuns: 3 })
    await store.createRun(makeRun('a', now(), { tenant: 'acme' }))
    await store.updateRun('a', (run) => hold(run, now()))
    await store.createRun(makeRun('b', now() + 1, { tenant: 'acme' }))
    await t.rejects(peer.updateRun('b', (run) => hold(run, now())), TenantWaitingQuotaError)
    await store.endRun('a', now())
    await peer.updateRun('b', (run) => hold(run, now()))
    t.equal((await store.getRun('b'))?.waiting?.state.batchId, 'b1', 'an ended run frees its place')
  })
}
