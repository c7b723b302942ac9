/**
 * The lease of a running batch (SPEC section 5, "Lease"): renewed while the
 * batch runs, so a batch longer than the lease keeps its run; and the renewal
 * is how a replica learns that its lease was taken over or that the run was
 * cancelled while a cancel could not reach it.
 */
import t from 'tap'
import { buildTestApp, holdCalls, post, startExecutor, tool } from '../helper.js'
import { FakeClock } from '../clock.js'

/** Renewed every third of it: every 100 ms of the app's clock, which only the tests move. */
const LEASE_MS = 300
const clock = new FakeClock()

const ex = await startExecutor(t)
ex.on('look', () => ({ content: 'seen' }))
const { app } = await buildTestApp(t, {
  leaseMs: LEASE_MS,
  clock,
  tools: [tool('slow', ex.url, { readOnly: true }), tool('look', ex.url, { readOnly: true })]
})
const slow = holdCalls(ex, 'slow')
t.teardown(() => { slow.release() })

const calls = [{ id: 'a', name: 'slow', arguments: {} }, { id: 'b', name: 'look', arguments: {} }]
const sequential = { toolExecution: 'sequential' }
type Answer = Awaited<ReturnType<typeof post>>

/** A sequential run whose batch is in flight, its first call held at the executor until `release()`. */
async function heldBatch (t: { teardown: (fn: () => void) => void }, runId: string): Promise<{ release: () => void, answer: Promise<Answer> }> {
  const held = holdCalls(ex, 'slow')
  t.teardown(() => { held.release() })
  await post(app, '/v1/runs', { runId, ...sequential })
  const answer = post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls })
  await held.started
  return { release: held.release, answer }
}

const outcomes = (res: Answer): unknown[] => res.body.results.map((r: { status: string, details: { reason?: string } }) => [r.status, r.details.reason])

t.test('a batch that runs longer than the lease keeps its run to the end', async (t) => {
  await post(app, '/v1/runs', { runId: 'long', ...sequential })
  const pending = post(app, '/v1/runs/long/batches', { batchId: 'b1', calls })
  await slow.started
  // Three leases' worth: without renewal the lease would have lapsed twice over.
  await clock.pass(LEASE_MS * 3)
  const other = await post(app, '/v1/runs/long/batches', { batchId: 'b2', calls: [{ id: 'x', name: 'look', arguments: {} }] })
  t.equal(other.status, 409)
  t.equal(other.body.code, 'run_busy', 'the renewed lease still holds the run')
  slow.release()
  const res = await pending
  t.equal(res.status, 200)
  t.strictSame(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok'])
  t.equal(res.body.continue, true)
})

t.test('a lease taken over by another batch stops this one starting anything more', async (t) => {
  const held = await heldBatch(t, 'taken')
  // What a replica that found the lease lapsed would have written.
  await app.services.store.updateRun('taken', (r) => {
    r.inFlight = { batchId: 'elsewhere', owner: 'another-replica', leaseExpiresAt: clock.now() + 60_000 }
  })
  await clock.pass(LEASE_MS)
  held.release()
  const res = await held.answer
  t.equal(res.status, 200)
  t.strictSame(outcomes(res), [['ok', undefined], ['cancelled', 'lease_lost']], 'the running call settles, the next never starts')
  t.equal(ex.calls.filter((c) => c.runId === 'taken' && c.tool === 'look').length, 0, 'the executor never saw the second call')
})

t.test('a cancel that did not reach the replica is found in the run state at the next renewal', async (t) => {
  const held = await heldBatch(t, 'missed')
  // The state a cancel on another replica leaves, without the message that should have come with it.
  await app.services.store.updateRun('missed', (r) => {
    r.state = 'cancelled'
    r.terminationReason = 'cancelled'
  })
  await clock.pass(LEASE_MS)
  held.release()
  const res = await held.answer
  t.equal(res.status, 200)
  t.strictSame(outcomes(res), [['ok', undefined], ['cancelled', 'cancelled']])
  t.equal(res.body.continue, false)
  t.match(res.body.run, { state: 'cancelled' })
})

t.test("a running batch's admission start is in the run's record until its answer is stored, and gone after", async (t) => {
  const { release, answer } = await heldBatch(t, 'admitted')
  t.equal((await app.services.store.getRun('admitted'))?.admitted?.batchId, 'b1', 'kept while the batch runs: a resume would admit it from there')
  release()
  t.equal((await answer).status, 200)
  t.equal((await app.services.store.getRun('admitted'))?.admitted, null, 'dropped with the answer')
})
