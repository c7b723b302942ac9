/**
 * An idempotent tool's retry of an uncertain write is sent under the
 * original operation id (the same Idempotency-Key), and its definitive
 * answer resolves the uncertainty.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { FakeClock } from '../clock.js'
import { TIMEOUT_MS, batch, listUncertain, metric, timeOut } from './support.js'

async function setup (t: Test) {
  const ex = await startExecutor(t)
  const clock = new FakeClock()
  const release: Array<() => void> = []
  t.teardown(() => { for (const r of release) r() })
  /** Effects applied, by Idempotency-Key: an idempotent executor applies each key once. */
  const applied = new Map<string, number>()
  const once = async (key: string, first: boolean): Promise<void> => {
    applied.set(key, (applied.get(key) ?? 0) + (applied.has(key) ? 0 : 1))
    if (!first) return
    await timeOut(clock)
    await new Promise<void>((resolve) => release.push(resolve))
  }
  ex.on('put', async (c) => {
    await once(c.idempotencyKey!, ex.calls.filter((x) => x.tool === 'put').length === 1)
    return { content: { stored: c.arguments.k } }
  })
  ex.on('charge', async (c) => {
    await once(c.idempotencyKey!, ex.calls.filter((x) => x.tool === 'charge').length === 1)
    return { status: 'committed', result: { charged: c.arguments.x }, stateRevision: 9 }
  })
  const { app, logs } = await buildTestApp(t, {
    clock,
    tools: [
      tool('put', ex.url, { executor: { url: `${ex.url}/tools/put`, timeoutMs: TIMEOUT_MS }, idempotent: true }),
      tool('charge', ex.url, { executor: { url: `${ex.url}/tools/charge`, timeoutMs: TIMEOUT_MS }, idempotent: true, action: {} })
    ]
  })
  return { ex, app, logs, applied }
}

t.test('an idempotent tool retried in the next turn goes out again under the original Idempotency-Key, and its answer resolves the uncertainty', async (t) => {
  const { ex, app, logs, applied } = await setup(t)
  t.equal((await post(app, '/v1/runs', { runId: 'i1' })).status, 201)
  const first = await batch(app, 'i1', 'b1', [{ id: 'c1', name: 'put', arguments: { k: 'v' } }])
  t.equal(first.results[0].status, 'uncertain')
  const op = first.results[0].details.operationId

  const second = await batch(app, 'i1', 'b2', [{ id: 'c2', name: 'put', arguments: { k: 'v' } }, { id: 'c3', name: 'put', arguments: { k: 'v' } }])
  t.equal(second.results[0].status, 'ok', 'the retry was sent and answered')
  t.equal(second.results[0].details.operationId, op, 'under the original operation id')
  t.equal(second.results[1].status, 'blocked', 'a second copy in the same batch waits behind the retry')
  const sent = ex.calls.filter((c) => c.tool === 'put')
  t.equal(sent.length, 2)
  t.same(sent.map((c) => c.idempotencyKey), [op, op], 'the same Idempotency-Key both times')
  t.same(sent.map((c) => c.operationId), [op, op])
  t.same(sent.map((c) => c.callId), ['c1', 'c2'])
  t.equal(applied.get(op), 1, 'the executor applied it once')
  t.same(await listUncertain(app, 'i1'), [], 'resolved')
  t.equal(await metric(app, 'toolgate_uncertain_resolved_total', 'how="idempotent_retry"'), 1)
  t.ok(logs.some((l) => l.includes('uncertain write resolved') && l.includes(op) && l.includes('idempotent_retry')))

  // Resolved: the same call again is a plain new call, under a new operation id.
  const third = await batch(app, 'i1', 'b3', [{ id: 'c4', name: 'put', arguments: { k: 'v' } }])
  t.equal(third.results[0].status, 'ok')
  t.not(third.results[0].details.operationId, op)
})

t.test("an idempotent action tool's retry settles the original receipt in place", async (t) => {
  const { ex, app } = await setup(t)
  t.equal((await post(app, '/v1/runs', { runId: 'i2' })).status, 201)
  const first = await batch(app, 'i2', 'b1', [{ id: 'c1', name: 'charge', arguments: { x: 3 } }])
  t.equal(first.results[0].details.receipt.status, 'uncertain')
  const op = first.results[0].details.operationId
  const second = await batch(app, 'i2', 'b2', [{ id: 'c2', name: 'charge', arguments: { x: 3 } }])
  t.equal(second.results[0].status, 'ok')
  const receipt = second.results[0].details.receipt
  t.match(receipt, { operationId: op, callId: 'c1', batchId: 'b1', status: 'committed', result: { charged: 3 }, stateRevision: 9, dispatch: { disposition: 'dispatched', attempts: 2 } })
  t.same(receipt.timeline.map((e: { event: string }) => e.event), ['prepared', 'dispatched', 'timed_out', 'retried', 'responded'])
  t.same((await get(app, `/v1/receipts/${op}`)).body, receipt, 'the journal holds the settled receipt')
  t.equal((await get(app, '/v1/runs/i2/receipts')).body.receipts.length, 1, 'one receipt for the operation')
  t.same(ex.calls.filter((c) => c.tool === 'charge').map((c) => c.idempotencyKey), [op, op])
  t.same(await listUncertain(app, 'i2'), [])
})

t.test('a non-idempotent tool is never retried under the original key: it is blocked', async (t) => {
  const ex = await startExecutor(t)
  const clock = new FakeClock()
  ex.on('put', async () => {
    await timeOut(clock)
    return await new Promise(() => {})
  })
  const { app } = await buildTestApp(t, { clock, tools: [tool('put', ex.url, { executor: { url: `${ex.url}/tools/put`, timeoutMs: TIMEOUT_MS } })] })
  t.equal((await post(app, '/v1/runs', { runId: 'i3' })).status, 201)
  await batch(app, 'i3', 'b1', [{ id: 'c1', name: 'put', arguments: { k: 'v' } }])
  const second = await batch(app, 'i3', 'b2', [{ id: 'c2', name: 'put', arguments: { k: 'v' } }])
  t.equal(second.results[0].status, 'blocked')
  t.equal(ex.calls.length, 1)
})

t.test('a retry that cannot reach the executor resolves nothing: the uncertainty stays, and an action receipt stays uncertain', async (t) => {
  // An executor that takes every call and never answers (its timeout passes while it has it), then goes away entirely.
  const clock = new FakeClock()
  const server = createServer(() => { void timeOut(clock) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const { app } = await buildTestApp(t, {
    clock,
    tools: [
      tool('put', url, { executor: { url: `${url}/tools/put`, timeoutMs: TIMEOUT_MS }, idempotent: true }),
      tool('charge', url, { executor: { url: `${url}/tools/charge`, timeoutMs: TIMEOUT_MS }, idempotent: true, action: {} })
    ]
  })
  t.equal((await post(app, '/v1/runs', { runId: 'i4' })).status, 201)
  // One write a batch: within a batch, a write after an uncertain one would be blocked behind it.
  const first = [
    (await batch(app, 'i4', 'b1', [{ id: 'c1', name: 'put', arguments: { k: 'v' } }])).results[0],
    (await batch(app, 'i4', 'b2', [{ id: 'c2', name: 'charge', arguments: { x: 1 } }])).results[0]
  ]
  t.same(first.map((r) => r.status), ['uncertain', 'uncertain'])
  const [putOp, chargeOp] = first.map((r) => r.details.operationId)
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))

  const put = (await batch(app, 'i4', 'b3', [{ id: 'c3', name: 'put', arguments: { k: 'v' } }])).results[0]
  const charge = (await batch(app, 'i4', 'b4', [{ id: 'c4', name: 'charge', arguments: { x: 1 } }])).results[0]
  t.equal(put.status, 'error')
  t.equal(put.details.reason, 'executor_unavailable')
  t.equal(put.details.operationId, putOp, 'it was tried under the original operation id')
  t.equal(charge.status, 'uncertain', 'the receipt says what is known: nothing yet')
  t.match(charge.details.receipt, { operationId: chargeOp, status: 'uncertain', callId: 'c2' })
  t.equal((await get(app, `/v1/receipts/${chargeOp}`)).body.status, 'uncertain')
  t.same((await listUncertain(app, 'i4')).map((u: { operationId: string }) => u.operationId), [putOp, chargeOp], 'both still unresolved')
  t.equal(await metric(app, 'toolgate_uncertain_resolved_total', 'how="idempotent_retry"'), 0)
})
