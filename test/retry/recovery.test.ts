/**
 * Recovery through executor.statusUrl: asked at once after a write became
 * uncertain, then with backoff on a fake clock, in the background; its
 * answer resolves (and settles an action's receipt) unless it is unknown.
 */
import t, { type Test } from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { Attempts, batch, listUncertain, metric, startStatusServer, type StatusBehaviour } from './support.js'
import { FakeClock } from '../clock.js'

/**
 * The tools' timeout. A write's passes on the app's clock while the executor
 * holds it; a status question's (the same, capped) is a real one, and short.
 */
const TIMEOUT_MS = 150

async function setup (t: Test, status: StatusBehaviour, config: Record<string, unknown> = {}) {
  const ex = await startExecutor(t)
  // Every write is held past its timeout (the executor has it when the clock passes it): uncertain.
  const clock = new FakeClock()
  const release: Array<() => void> = []
  t.teardown(() => { for (const r of release) r() })
  const hold = async (): Promise<unknown> => {
    await clock.pass(TIMEOUT_MS)
    await new Promise<void>((resolve) => release.push(resolve))
    return { status: 'committed', result: {} }
  }
  ex.on('order', hold)
  ex.on('ship', hold)
  const st = await startStatusServer(t)
  st.on('order', status)
  st.on('ship', status)
  const attempts = new Attempts()
  const { app, logs } = await buildTestApp(t, {
    config,
    clock,
    uncertain: { onRecoveryAttempt: attempts.hook },
    tools: [
      tool('order', ex.url, { executor: { url: `${ex.url}/tools/order`, timeoutMs: TIMEOUT_MS, statusUrl: `${st.url}/status/order` }, action: {} }),
      tool('ship', ex.url, { executor: { url: `${ex.url}/tools/ship`, timeoutMs: TIMEOUT_MS, statusUrl: `${st.url}/status/ship` } })
    ]
  })
  t.equal((await post(app, '/v1/runs', { runId: 'r' })).status, 201)
  return { ex, st, app, logs, clock, attempts }
}

t.test('a status URL answering committed settles the receipt as recovered and unblocks the call', async (t) => {
  const { ex, st, app, attempts } = await setup(t, () => ({ status: 'committed', result: { order: 42 }, stateRevision: 7 }))
  const first = await batch(app, 'r', 'b1', [{ id: 'c1', name: 'order', arguments: { x: 1 } }])
  const op = first.results[0].details.operationId
  t.equal(first.results[0].status, 'uncertain', 'the batch answers without waiting for recovery')
  const outcome = await attempts.until(1)
  t.equal(outcome.kind, 'resolved')
  t.same(st.asked, [{ tool: 'order', operationId: op }], 'asked once, at once, with the operation id')
  const receipt = (await get(app, `/v1/receipts/${op}`)).body
  t.match(receipt, { status: 'committed', result: { order: 42 }, stateRevision: 7, dispatch: { disposition: 'recovered', attempts: 1 } })
  t.equal(receipt.timeline.at(-1).event, 'recovered')
  t.same(await listUncertain(app, 'r'), [])
  t.equal(await metric(app, 'toolgate_uncertain_resolved_total', 'how="status_url"'), 1)
  const later = await batch(app, 'r', 'b2', [{ id: 'c2', name: 'order', arguments: { x: 1 } }])
  t.not(later.results[0].status, 'blocked', 'a plain new call once resolved')
  t.equal(ex.calls.filter((c) => c.tool === 'order').length, 2)
})

t.test('a status URL answering rejected settles the receipt as rejected', async (t) => {
  const { app, attempts } = await setup(t, () => ({ status: 'rejected', result: { reason: 'no stock' } }))
  const first = await batch(app, 'r', 'b1', [{ id: 'c1', name: 'order', arguments: { x: 1 } }])
  const op = first.results[0].details.operationId
  t.equal((await attempts.until(1)).kind, 'resolved')
  t.match((await get(app, `/v1/receipts/${op}`)).body, { status: 'rejected', result: { reason: 'no stock' }, dispatch: { disposition: 'recovered' } })
  t.same(await listUncertain(app, 'r'), [])
})

t.test('unknown keeps the uncertainty open and is asked again with backoff until an answer resolves it', async (t) => {
  let answer: unknown = { status: 'unknown' }
  const { st, app, clock, attempts } = await setup(t, () => answer)
  await batch(app, 'r', 'b1', [{ id: 'c1', name: 'ship', arguments: { x: 1 } }])
  t.equal((await attempts.until(1)).kind, 'unknown')
  t.equal((await listUncertain(app, 'r')).length, 1, 'still open')
  const blocked = await batch(app, 'r', 'b2', [{ id: 'c2', name: 'ship', arguments: { x: 1 } }])
  t.equal(blocked.results[0].status, 'blocked')
  clock.advance(999)
  t.equal(st.asked.length, 1, 'not before the backoff')
  clock.advance(1)
  t.equal((await attempts.until(2)).kind, 'unknown')
  answer = { status: 'committed' }
  clock.advance(1999)
  t.equal(st.asked.length, 2)
  clock.advance(1)
  t.equal((await attempts.until(3)).kind, 'resolved')
  t.same(await listUncertain(app, 'r'), [])
})

t.test('a 500 from the status URL is asked again later; the uncertainty stays meanwhile', async (t) => {
  let answer: unknown = 500
  const { app, clock, attempts } = await setup(t, () => answer)
  await batch(app, 'r', 'b1', [{ id: 'c1', name: 'ship', arguments: { x: 1 } }])
  t.match(await attempts.until(1), { kind: 'error', cause: 'http_500' })
  t.equal((await listUncertain(app, 'r')).length, 1)
  answer = { status: 'failed' }
  clock.advance(1000)
  t.equal((await attempts.until(2)).kind, 'resolved')
  t.same(await listUncertain(app, 'r'), [])
})

t.test('a status URL that never answers times out, blocks no batch, and is given up after the window', async (t) => {
  const hang: Array<() => void> = []
  t.teardown(() => { for (const h of hang) h() })
  const { st, app, clock, attempts, logs } = await setup(t, async () => await new Promise((resolve) => hang.push(() => resolve({ status: 'unknown' }))), { recoveryWindowSeconds: 5 })
  await batch(app, 'r', 'b1', [{ id: 'c1', name: 'ship', arguments: { x: 1 } }])
  // Batches go on while the question hangs.
  const other = await batch(app, 'r', 'b2', [{ id: 'c2', name: 'ship', arguments: { x: 2 } }])
  t.equal(other.results[0].status, 'uncertain', 'another write ran (and timed out too) meanwhile')
  t.match(await attempts.until(2), { kind: 'error', cause: 'timeout' })
  // Attempts at 0 s, 1 s and 3 s for each write; the next would come at 7 s, past the 5 s window.
  for (const [ms, n] of [[1000, 4], [2000, 6]] as const) {
    clock.advance(ms)
    await attempts.until(n)
  }
  const ops = new Set(st.asked.map((a) => a.operationId))
  t.equal(ops.size, 2)
  t.equal(st.asked.length, 6, 'three questions for each of the two writes')
  clock.advance(60_000)
  t.equal(clock.timeouts, 0, 'nothing more is scheduled')
  t.equal((await listUncertain(app, 'r')).length, 2, 'still unresolved: only a person (or a recheck) can tell now')
  t.ok(logs.some((l) => l.includes('recovery window passed')))
})

t.test('recheck asks the status URL at once and answers what it said', async (t) => {
  let answer: unknown = { status: 'unknown' }
  const { app, attempts } = await setup(t, () => answer, { recoveryWindowSeconds: 0 })
  const first = await batch(app, 'r', 'b1', [{ id: 'c1', name: 'order', arguments: { x: 1 } }])
  const op = first.results[0].details.operationId
  await attempts.until(1)
  const unknown = await post(app, `/v1/receipts/${op}/resolve`, { recheck: true })
  t.equal(unknown.status, 200)
  t.same(unknown.body, { operationId: op, runId: 'r', resolved: false, check: 'unknown' })
  answer = { status: 'committed', result: { order: 1 } }
  const done = await post(app, `/v1/receipts/${op}/resolve`, { recheck: true })
  t.equal(done.status, 200)
  t.match(done.body, { operationId: op, runId: 'r', resolved: true, how: 'status_url', status: 'committed', receipt: { dispatch: { disposition: 'recovered' } } })
  const again = await post(app, `/v1/receipts/${op}/resolve`, { recheck: true })
  t.equal(again.status, 409)
  t.equal(again.body.code, 'operation_not_uncertain')
})

t.test('one replica at a time: while another replica holds the lock on an operation it is not asked', async (t) => {
  const { st, app, attempts } = await setup(t, () => ({ status: 'unknown' }), { recoveryWindowSeconds: 0 })
  const first = await batch(app, 'r', 'b1', [{ id: 'c1', name: 'ship', arguments: { x: 1 } }])
  const op = first.results[0].details.operationId
  await attempts.until(1)
  t.equal(st.asked.length, 1)
  const { store } = app.services
  t.ok(await store.tryLock(`recover:${op}`, 'another-replica', 60_000), 'another replica takes the lock')
  const busy = await post(app, `/v1/receipts/${op}/resolve`, { recheck: true })
  t.same(busy.body, { operationId: op, runId: 'r', resolved: false, check: 'busy' })
  t.equal(st.asked.length, 1, 'not asked while the lock is held elsewhere')
  await store.unlock(`recover:${op}`, 'another-replica')
  const asked = await post(app, `/v1/receipts/${op}/resolve`, { recheck: true })
  t.same(asked.body, { operationId: op, runId: 'r', resolved: false, check: 'unknown' })
  t.equal(st.asked.length, 2)
})
