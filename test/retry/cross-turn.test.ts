/**
 * A write whose outcome is unknown, sent again by the model in a later turn
 * under a new call id, is not applied twice (SPEC section 14).
 */
import t, { type Test } from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { FakeClock } from '../clock.js'
import { TIMEOUT_MS, batch, listUncertain, metric, timeOut } from './support.js'

async function setup (t: Test) {
  const ex = await startExecutor(t)
  const clock = new FakeClock()
  let applied = 0
  const release: Array<() => void> = []
  t.teardown(() => { for (const r of release) r() })
  // The first write applies its effect, then answers too late: toolgate gives up on it.
  ex.on('pay', async (c) => {
    applied++
    if (ex.calls.filter((x) => x.tool === 'pay').length > 1) return { content: { paid: c.arguments.x } }
    await timeOut(clock)
    await new Promise<void>((resolve) => release.push(resolve))
    return { content: { paid: c.arguments.x } }
  })
  ex.on('order', async () => {
    applied++
    if (ex.calls.filter((x) => x.tool === 'order').length > 1) return { status: 'committed', result: { order: 1 } }
    await timeOut(clock)
    await new Promise<void>((resolve) => release.push(resolve))
    return { status: 'committed', result: { order: 1 } }
  })
  const { app, logs } = await buildTestApp(t, {
    clock,
    tools: [
      tool('pay', ex.url, { executor: { url: `${ex.url}/tools/pay`, timeoutMs: TIMEOUT_MS }, conflictKey: 'acct:{/k}' }),
      tool('order', ex.url, { executor: { url: `${ex.url}/tools/order`, timeoutMs: TIMEOUT_MS }, action: {} }),
      tool('look', ex.url, { readOnly: true }),
      tool('note', ex.url)
    ]
  })
  return { ex, app, logs, applied: () => applied }
}

/** Tenants a and b (keys `orch-a`, `ops-a`, `admin-a`, `orch-b`) and a plain `pay` whose every call times out: uncertain. */
async function tenantsSetup (t: Test) {
  const keysDoc = { keys: [
    { key: 'orch-a', tenant: 'a', roles: ['orchestrator'] },
    { key: 'ops-a', tenant: 'a', roles: ['operator'] },
    { key: 'orch-b', tenant: 'b', roles: ['orchestrator'] },
    { key: 'admin-a', tenant: 'a', roles: ['admin'] }
  ] }
  const ex = await startExecutor(t)
  const clock = new FakeClock()
  ex.on('pay', async () => {
    await timeOut(clock)
    return await new Promise(() => {})
  })
  const { app, logs } = await buildTestApp(t, { clock, keysDoc, tools: [tool('pay', ex.url, { executor: { url: `${ex.url}/tools/pay`, timeoutMs: TIMEOUT_MS } })] })
  return { app, logs, as: (key: string) => ({ authorization: `Bearer ${key}` }) }
}

t.test('a timed-out write sent again in the next turn under a new call id is blocked, and the executor sees it once', async (t) => {
  const { ex, app, logs, applied } = await setup(t)
  t.equal((await post(app, '/v1/runs', { runId: 'r1' })).status, 201)
  const first = await batch(app, 'r1', 'b1', [{ id: 'c1', name: 'pay', arguments: { x: 5, k: 'a' } }])
  t.equal(first.results[0].status, 'uncertain')
  const op = first.results[0].details.operationId
  t.match(op, /^op_/)

  const listed = await listUncertain(app, 'r1')
  t.equal(listed.length, 1)
  t.match(listed[0], { operationId: op, callId: 'c1', batchId: 'b1', tool: 'pay', conflictKey: 'acct:a', action: false })
  t.type(listed[0].fingerprint, 'string')

  const second = await batch(app, 'r1', 'b2', [
    { id: 'c2', name: 'pay', arguments: { x: 5, k: 'a' } },
    { id: 'c3', name: 'look', arguments: { x: 5, k: 'a' } },
    { id: 'c4', name: 'pay', arguments: { x: 6, k: 'b' } }
  ])
  const [retry, read, other] = second.results
  t.equal(retry.status, 'blocked')
  t.equal(retry.isError, true)
  t.match(retry.details, { blockedBy: 'c1', blockedByOperation: op, reason: 'unresolved_uncertain_write' })
  const content = JSON.parse(retry.content)
  t.equal(content.error, 'unresolved_uncertain_write')
  t.match(content.message, /sent before \(c1\).*unknown.*may already have taken effect.*not be repeated until/)
  t.equal(read.status, 'ok', 'a read is never blocked')
  t.equal(other.status, 'ok', 'a different write is not blocked')
  t.equal(ex.calls.filter((c) => c.tool === 'pay' && c.arguments.x === 5).length, 1, 'the executor saw the uncertain write once')
  t.equal(applied(), 2, 'one effect for the uncertain write, one for the other write')

  // A third turn, still unresolved: still blocked.
  const third = await batch(app, 'r1', 'b3', [{ id: 'c5', name: 'pay', arguments: { x: 5, k: 'a' } }])
  t.equal(third.results[0].status, 'blocked')
  t.equal(third.results[0].details.blockedBy, 'c1')
  t.equal(await metric(app, 'toolgate_uncertain_unresolved'), 1)
  t.ok(logs.some((l) => l.includes('uncertain write kept unresolved') && l.includes(op)))
})

t.test('an action tool retried in a later turn is blocked too, and its receipt stays uncertain', async (t) => {
  const { ex, app } = await setup(t)
  t.equal((await post(app, '/v1/runs', { runId: 'r2' })).status, 201)
  const first = await batch(app, 'r2', 'b1', [{ id: 'c1', name: 'order', arguments: { x: 1 } }])
  t.equal(first.results[0].status, 'uncertain')
  const op = first.results[0].details.operationId
  t.equal(first.results[0].details.receipt.status, 'uncertain')
  const second = await batch(app, 'r2', 'b2', [{ id: 'c2', name: 'order', arguments: { x: 1 } }])
  t.equal(second.results[0].status, 'blocked')
  t.equal(second.results[0].details.blockedByOperation, op)
  t.equal(ex.calls.filter((c) => c.tool === 'order').length, 1)
  const listed = await listUncertain(app, 'r2')
  t.match(listed, [{ operationId: op, action: true, tool: 'order' }])
  const receipts = await get(app, '/v1/runs/r2/receipts')
  t.equal(receipts.body.receipts.length, 1, 'the blocked call made no receipt')
})

t.test('resolving by hand makes a later identical call a plain new call', async (t) => {
  const { ex, app, logs } = await setup(t)
  t.equal((await post(app, '/v1/runs', { runId: 'r3' })).status, 201)
  const first = await batch(app, 'r3', 'b1', [{ id: 'c1', name: 'order', arguments: { x: 1 } }])
  const op = first.results[0].details.operationId
  const resolved = await post(app, `/v1/receipts/${op}/resolve`, { status: 'committed', result: { order: 7 } })
  t.equal(resolved.status, 200)
  t.match(resolved.body, { operationId: op, runId: 'r3', resolved: true, how: 'manual', status: 'committed' })
  t.match(resolved.body.receipt, { status: 'committed', result: { order: 7 }, dispatch: { disposition: 'resolved' } })
  t.same(resolved.body.receipt.timeline.map((e: { event: string }) => e.event), ['prepared', 'dispatched', 'timed_out', 'resolved'])
  t.same((await get(app, `/v1/receipts/${op}`)).body.status, 'committed')
  t.same(await listUncertain(app, 'r3'), [])

  const again = await post(app, `/v1/receipts/${op}/resolve`, { status: 'failed' })
  t.equal(again.status, 409)
  t.equal(again.body.code, 'operation_not_uncertain')

  const later = await batch(app, 'r3', 'b2', [{ id: 'c2', name: 'order', arguments: { x: 1 } }])
  t.equal(later.results[0].status, 'ok', 'dispatched as a new call')
  t.equal(ex.calls.filter((c) => c.tool === 'order').length, 2)
  t.equal(await metric(app, 'toolgate_uncertain_resolved_total', 'how="manual"'), 1)
  t.equal(await metric(app, 'toolgate_uncertain_unresolved'), 0)
  const line = logs.find((l) => l.includes('"uncertain write resolved"'))
  t.ok(line)
  t.match(JSON.parse(line!), { runId: 'r3', operationId: op, callId: 'c1', how: 'manual', status: 'committed' })
})

t.test('a plain uncertain write is resolved by hand through its operation id as well', async (t) => {
  const { ex, app } = await setup(t)
  t.equal((await post(app, '/v1/runs', { runId: 'r4' })).status, 201)
  const first = await batch(app, 'r4', 'b1', [{ id: 'c1', name: 'pay', arguments: { x: 5, k: 'a' } }])
  const op = first.results[0].details.operationId
  const resolved = await post(app, `/v1/receipts/${op}/resolve`, { status: 'rejected' })
  t.equal(resolved.status, 200)
  t.match(resolved.body, { resolved: true, how: 'manual', status: 'rejected' })
  t.notOk('receipt' in resolved.body, 'a plain write has no receipt')
  const later = await batch(app, 'r4', 'b2', [{ id: 'c2', name: 'pay', arguments: { x: 5, k: 'a' } }])
  t.equal(later.results[0].status, 'ok')
  t.equal(ex.calls.filter((c) => c.tool === 'pay').length, 2)
})

t.test('a plain write resolved already answers 409 when resolved again, by hand or by recheck; to another tenant it stays unknown', async (t) => {
  const { app, logs, as } = await tenantsSetup(t)
  t.equal((await post(app, '/v1/runs', { runId: 'r7' }, as('orch-a'))).status, 201)
  const first = await post(app, '/v1/runs/r7/batches', { calls: [{ id: 'c1', name: 'pay', arguments: { x: 1, secret: 'hunter2-resolve' } }] }, as('orch-a'))
  const op = first.body.results[0].details.operationId
  t.equal(await metric(app, 'toolgate_uncertain_unresolved'), 1)

  const resolved = await post(app, `/v1/receipts/${op}/resolve`, { status: 'committed' }, as('orch-a'))
  t.equal(resolved.status, 200)
  t.notOk('receipt' in resolved.body, 'a plain write: no receipt to find it by')
  t.equal(await metric(app, 'toolgate_uncertain_unresolved'), 0, 'resolved: not counted')

  for (const body of [{ status: 'failed' }, { recheck: true }]) {
    const again = await post(app, `/v1/receipts/${op}/resolve`, body, as('orch-a'))
    t.equal(again.status, 409, JSON.stringify(body))
    t.equal(again.body.code, 'operation_not_uncertain')
    t.match(again.headers['content-type'], /^application\/problem\+json/)
    const otherTenant = await post(app, `/v1/receipts/${op}/resolve`, body, as('orch-b'))
    t.equal(otherTenant.status, 404, "another tenant's operation does not exist for it")
    t.equal(otherTenant.body.code, 'operation_not_found')
    const unknown = await post(app, '/v1/receipts/op_nothing/resolve', body, as('orch-a'))
    t.same([unknown.status, unknown.body.code], [404, 'operation_not_found'])
    t.equal(otherTenant.body.detail, unknown.body.detail.replace('op_nothing', op), 'it learns nothing more than of an unknown id')
  }
  t.equal(await metric(app, 'toolgate_uncertain_unresolved'), 0)
  t.equal(await metric(app, 'toolgate_uncertain_resolved_total', 'how="manual"'), 1, 'resolved once')
  t.same((await get(app, '/v1/runs/r7/uncertain', as('orch-a'))).body.uncertain, [])
  t.notOk(logs.some((l) => l.includes('hunter2-resolve')), 'arguments are never logged')
})

t.test('the resolve route refuses what it cannot resolve with a clear problem', async (t) => {
  const { app, as } = await tenantsSetup(t)
  t.equal((await post(app, '/v1/runs', { runId: 'r5' }, as('orch-a'))).status, 201)
  const first = await post(app, '/v1/runs/r5/batches', { calls: [{ id: 'c1', name: 'pay', arguments: { x: 1 } }] }, as('orch-a'))
  const op = first.body.results[0].details.operationId

  for (const body of [{}, { status: 'maybe' }, { recheck: false }, { status: 'committed', extra: 1 }, { status: 'committed', recheck: true }]) {
    const res = await post(app, `/v1/receipts/${op}/resolve`, body, as('orch-a'))
    t.equal(res.status, 400, JSON.stringify(body))
    t.equal(res.body.code, 'invalid_request')
  }
  const unknown = await post(app, '/v1/receipts/op_nothing/resolve', { status: 'committed' }, as('orch-a'))
  t.equal(unknown.status, 404)
  t.equal(unknown.body.code, 'operation_not_found')
  const otherTenant = await post(app, `/v1/receipts/${op}/resolve`, { status: 'committed' }, as('orch-b'))
  t.equal(otherTenant.status, 404, "another tenant's operation does not exist for it")
  t.equal((await get(app, '/v1/runs/r5/uncertain', as('orch-b'))).status, 404)
  t.equal((await post(app, `/v1/receipts/${op}/resolve`, { status: 'committed' }, as('admin-a'))).status, 403)
  const recheck = await post(app, `/v1/receipts/${op}/resolve`, { recheck: true }, as('orch-a'))
  t.equal(recheck.status, 409)
  t.equal(recheck.body.code, 'no_status_url')
  t.equal((await get(app, '/v1/runs/r5/uncertain', as('ops-a'))).body.uncertain.length, 1, 'the operator role may list')
  const byOperator = await post(app, `/v1/receipts/${op}/resolve`, { status: 'failed' }, as('ops-a'))
  t.equal(byOperator.status, 200, 'the operator role may resolve')
})
