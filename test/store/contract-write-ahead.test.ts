/**
 * The WriteAhead contract (src/store/write-ahead.ts, SPEC section 17),
 * against the memory store and the Redis store alike: an epoch's writes
 * recorded under the batch's lease in one round trip, answered by the
 * stored batch answer, and turned by a take-over of a lapsed lease into
 * unresolved uncertainties of the run (cause `replica_lost`) in one atomic
 * step. Redis cases are skipped, saying why, when no Redis answers at
 * TOOLGATE_TEST_REDIS_URL.
 */
import type { Test } from 'tap'
import type { RunRecord } from '../../src/model/run.js'
import { RedisStore } from '../../src/store/redis.js'
import type { PendingWrite, Store } from '../../src/store/types.js'
import { type Harness, againstEveryStore, makeRun } from './harness.js'

await againstEveryStore('WriteAhead contract', contract)

function write (operationId: string, over: Partial<PendingWrite> = {}): PendingWrite {
  return { operationId, fingerprint: `fp_${operationId}`, conflictKey: 'acct:a', callId: `call_${operationId}`, tool: 'pay', batchId: 'b1', action: false, ...over }
}

const A = { owner: 'replica-a', batchId: 'b1' }

/** A run whose batch b1 holds the lease on replica-a, as the engine's start leaves it. */
async function leasedRun (store: Store, runId: string, now: number, over: Partial<RunRecord> = {}): Promise<RunRecord> {
  const run = makeRun(runId, now, over)
  await store.createRun(run)
  await store.updateRunWithBatchId(runId, 'b1', (r, entry) => {
    entry.requestHash = 'hash1'
    r.inFlight = { batchId: 'b1', owner: 'replica-a', leaseExpiresAt: now + 60_000 }
  })
  return run
}

/** The replica holding the lease is taken for dead: its lease lapsed. */
async function lapse (store: Store, runId: string, now: number): Promise<void> {
  await store.updateRun(runId, (r) => { r.inFlight!.leaseExpiresAt = now - 1 })
}

function roundTrips (store: Store): number | undefined {
  return store instanceof RedisStore ? store.traffic().roundTrips : undefined
}

async function contract (t: Test, h: Harness): Promise<void> {
  t.jobs = 3

  t.test("an epoch's writes are recorded under the batch's lease in one round trip, and every client lists them", async (t) => {
    const { store, peer, now } = await h.open(t)
    const run = await leasedRun(store, 'r1', now())
    const before = roundTrips(store)
    t.equal(await store.recordWrites(run, A, [write('op_1'), write('op_2', { conflictKey: null, action: true })]), true)
    if (before !== undefined) t.equal(roundTrips(store)! - before, 1, 'one round trip for the epoch')
    t.equal(await store.recordWrites(run, A, [write('op_3', { batchId: 'b1' })]), true, 'a later epoch adds its own')
    const listed = (await peer.pendingWrites(run)).sort((a, b) => a.operationId.localeCompare(b.operationId))
    t.same(listed, [write('op_1'), write('op_2', { conflictKey: null, action: true }), write('op_3')])
    t.equal(await store.recordWrites(run, A, []), true, 'an epoch without writes records nothing, and may go on')
  })

  t.test('nothing is recorded, and false is answered, unless that batch on that replica holds a valid lease of that run', async (t) => {
    const { store, peer, now } = await h.open(t)
    const run = await leasedRun(store, 'r1', now())
    t.equal(await store.recordWrites(run, { owner: 'replica-b', batchId: 'b1' }, [write('op_1')]), false, 'another replica')
    t.equal(await store.recordWrites(run, { owner: 'replica-a', batchId: 'b2' }, [write('op_1')]), false, 'another batch')
    t.equal(await store.recordWrites({ ...run, createdAt: run.createdAt + 1 }, A, [write('op_1')]), false, 'another incarnation of the id')
    t.equal(await store.recordWrites({ ...run, tenant: 'beta' }, A, [write('op_1')]), false, "another tenant's run of the id")
    t.equal(await store.recordWrites({ ...run, runId: 'nope' }, A, [write('op_1')]), false, 'a run that is not there')
    await lapse(store, 'r1', now())
    t.equal(await store.recordWrites(run, A, [write('op_1')]), false, 'a lapsed lease')
    t.same(await peer.pendingWrites(run), [])
  })

  t.test("the stored answer of the batch answers its run's records; an answer not stored (the lease passed) answers none", async (t) => {
    const { store, peer, now } = await h.open(t)
    const run = await leasedRun(store, 'r1', now())
    await store.recordWrites(run, A, [write('op_1')])
    const answer = { batchId: 'b1', requestHash: 'hash1', responseJson: '{"results":[]}', completedAt: now() }
    t.equal(await peer.completeBatch('r1', 'replica-b', answer), false, 'not the holder')
    t.equal((await store.pendingWrites(run)).length, 1, 'still recorded')
    t.equal(await store.completeBatch('r1', 'replica-a', answer), true)
    t.same(await peer.pendingWrites(run), [], 'answered with the batch')
  })

  t.test('a batch recorded without the lease (recordBatch) answers none of the writes of the batch holding it', async (t) => {
    const { store, peer, now } = await h.open(t)
    const run = await leasedRun(store, 'r1', now())
    await store.recordWrites(run, A, [write('op_1'), write('op_2')])
    const answer = { batchId: 'm1', requestHash: 'hash-m1', responseJson: '{"results":[]}', completedAt: now() }
    t.equal(await peer.recordBatch('r1', 'm1', () => answer), true)
    t.same((await store.pendingWrites(run)).map((w) => w.operationId).sort(), ['op_1', 'op_2'], 'still recorded')
    t.equal(await store.completeBatch('r1', 'replica-a', { ...answer, batchId: 'b1', requestHash: 'hash1' }), true)
    t.same(await peer.pendingWrites(run), [], 'answered by the answer of the batch that holds the lease')
  })

  t.test('under a shared lease, a batch answer keeps the lease and answers only its own writes; the last one releases it', async (t) => {
    const { store, peer, now } = await h.open(t)
    // The lease b1 holds stands for a shared one (MCP calls that arrive together), under which m1 and m2 run.
    const run = await leasedRun(store, 'r1', now())
    await store.recordWrites(run, A, [write('op_1', { batchId: 'm1' }), write('op_2', { batchId: 'm2' }), write('op_3', { batchId: 'm2' })])
    const answer = (batchId: string) => ({ batchId, requestHash: `hash-${batchId}`, responseJson: '{"results":[]}', completedAt: now() })
    t.equal(await peer.completeBatch('r1', 'replica-b', answer('m1'), undefined, { leaseId: 'b1', release: false, answeredWrites: ['op_1'] }), false, 'not the holder')
    t.equal(await store.completeBatch('r1', 'replica-a', answer('m1'), undefined, { leaseId: 'bX', release: false, answeredWrites: ['op_1'] }), false, 'not the shared lease held')
    t.equal(await store.completeBatch('r1', 'replica-a', answer('m1'), undefined, { leaseId: 'b1', release: false, answeredWrites: ['op_1'] }), true)
    t.same((await peer.pendingWrites(run)).map((w) => w.operationId).sort(), ['op_2', 'op_3'], "only m1's write is answered")
    t.same((await peer.getRun('r1'))?.inFlight?.batchId, 'b1', 'the lease is kept')
    t.equal((await peer.getBatch('r1', 'm1'))?.responseJson, '{"results":[]}', "m1's answer is stored")
    t.equal(await store.completeBatch('r1', 'replica-a', answer('m3'), undefined, { leaseId: 'b1', release: false, answeredWrites: [] }), true, 'a batch without writes answers none')
    t.equal((await peer.pendingWrites(run)).length, 2)
    t.equal(await store.completeBatch('r1', 'replica-a', answer('m2'), undefined, { leaseId: 'b1', release: true, answeredWrites: ['op_2', 'op_3'] }), true)
    t.same(await peer.pendingWrites(run), [], 'the last answer answers the rest')
    t.equal((await peer.getRun('r1'))?.inFlight, null, 'and releases the lease')
  })

  t.test("a take-over of a lapsed lease turns the run's recorded writes into unresolved uncertainties (replica_lost) at once, for every client", async (t) => {
    const { store, peer, now } = await h.open(t)
    const run = await leasedRun(store, 'r1', now())
    await store.recordWrites(run, A, [write('op_1'), write('op_2', { action: true })])
    t.equal(await peer.takeOverWrites(run), undefined, 'not while the lease is valid')
    t.equal((await peer.getRun('r1'))?.inFlight?.owner, 'replica-a', 'which stays as it was')
    await lapse(store, 'r1', now())
    const made = await peer.takeOverWrites(run)
    t.same(made?.map((u) => u.operationId).sort(), ['op_1', 'op_2'])
    const read = await store.getRun('r1')
    t.equal(read?.inFlight, null, 'the lapsed lease is freed')
    const listed = [...(read?.uncertain ?? [])].sort((a, b) => a.operationId.localeCompare(b.operationId))
    t.equal(listed.length, 2)
    t.match(listed[0], { operationId: 'op_1', fingerprint: 'fp_op_1', conflictKey: 'acct:a', callId: 'call_op_1', batchId: 'b1', tool: 'pay', action: false, cause: 'replica_lost' })
    t.match(listed[1], { operationId: 'op_2', action: true, cause: 'replica_lost' })
    t.type(listed[0]!.since, 'number')
    t.same(await store.pendingWrites(run), [], 'the records are gone')
    t.equal(await store.runOfUncertain('op_1'), 'r1', 'noted as indexUncertain notes them')
    t.equal(await peer.countUncertain(), 2)
    t.same(await store.takeOverWrites(run), [], 'taken over again: nothing more')
    t.equal((await store.getRun('r1'))?.uncertain?.length, 2)
  })

  t.test('a take-over adds no operation the run lists already, and keeps what the run listed before', async (t) => {
    const { store, now } = await h.open(t)
    const run = await leasedRun(store, 'r1', now())
    const older = { operationId: 'op_0', fingerprint: 'fp_0', conflictKey: null, callId: 'c0', batchId: 'b0', tool: 'pay', action: false, since: 1 }
    await store.updateRun('r1', (r) => { r.uncertain = [older, { ...older, operationId: 'op_1', callId: 'call_op_1', batchId: 'b1' }] })
    await store.recordWrites(run, A, [write('op_1'), write('op_2')])
    await lapse(store, 'r1', now())
    const made = await store.takeOverWrites(run)
    t.same(made?.map((u) => u.operationId), ['op_2'])
    t.same((await store.getRun('r1'))?.uncertain?.map((u) => u.operationId), ['op_0', 'op_1', 'op_2'])
  })

  t.test('a take-over of a run no lease holds finds what a failed batch left, and of one with nothing recorded changes nothing', async (t) => {
    const { store, now } = await h.open(t)
    const run = await leasedRun(store, 'r1', now())
    await store.recordWrites(run, A, [write('op_1')])
    // A batch that failed releases its lease without an answer: its records stay.
    await store.updateRun('r1', (r) => { r.inFlight = null })
    t.same((await store.takeOverWrites(run))?.map((u) => u.operationId), ['op_1'])
    const quiet = await leasedRun(store, 'r2', now())
    await store.updateRun('r2', (r) => { r.inFlight = null })
    t.same(await store.takeOverWrites(quiet), [])
    t.equal((await store.getRun('r2'))?.uncertain, undefined)
  })

  t.test('the replica that lost its lease records nothing after the take-over', async (t) => {
    const { store, peer, now } = await h.open(t)
    const run = await leasedRun(store, 'r1', now())
    await store.recordWrites(run, A, [write('op_1')])
    await lapse(store, 'r1', now())
    await peer.takeOverWrites(run)
    t.equal(await store.recordWrites(run, A, [write('op_2')]), false)
    t.same(await peer.pendingWrites(run), [])
  })

  t.test("a take-over of another incarnation, or of a run that is gone, changes nothing; a new incarnation sees no earlier run's records", async (t) => {
    const { store, peer, now, advance } = await h.open(t, { runTtlMs: h.ttl.long })
    const run = await leasedRun(store, 'r1', now())
    await store.recordWrites(run, A, [write('op_1')])
    await lapse(store, 'r1', now())
    t.equal(await store.takeOverWrites({ ...run, createdAt: run.createdAt - 1 }), undefined)
    t.equal(await store.takeOverWrites({ ...run, runId: 'nope' }), undefined)
    t.equal((await store.pendingWrites(run)).length, 1)
    await store.updateRun('r1', (r) => { r.inFlight = null })
    await advance(h.ttl.long * 1.2 + 300)
    t.equal(await store.getRun('r1'), undefined, 'the run expired')
    t.equal(await store.takeOverWrites(run), undefined)
    const again = makeRun('r1', now())
    await peer.createRun(again)
    t.same(await peer.pendingWrites(again), [], 'the new run has none')
    t.same(await store.takeOverWrites(again), [])
    t.equal((await store.getRun('r1'))?.uncertain, undefined)
  })
}
