import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, startExecutor, tool } from '../helper.js'
import { FakeClock } from '../clock.js'

const ACME = 'acme-orchestrator-key-0001'
const RIVAL = 'rival-orchestrator-key-002'
const keysDoc = {
  keys: [
    { key: ACME, tenant: 'acme', roles: ['orchestrator'] },
    { key: RIVAL, tenant: 'rival', roles: ['orchestrator'] }
  ]
}

async function call (app: FastifyInstance, key: string, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown): Promise<{ status: number, body: any }> {
  const res = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) })
  })
  return { status: res.statusCode, body: res.body === '' ? undefined : res.json() }
}

const calls = [
  { id: 'c1', name: 'build', arguments: { x: 1, y: 2 } },
  { id: 'c2', name: 'poke', arguments: { x: 3 } }
]

t.test("another tenant's run, batches and receipts do not exist for a tenant, and its attempts change nothing", async (t) => {
  const ex = await startExecutor(t)
  ex.on('build', () => ({ status: 'committed', result: { label: 'Wall #1' }, stateRevision: 1 }))
  const clock = new FakeClock()
  const { app } = await buildTestApp(t, { clock, keysDoc, tools: [tool('build', ex.url, { action: {} }), tool('poke', ex.url)] })

  t.equal((await call(app, ACME, 'POST', '/v1/runs', { runId: 'r1' })).status, 201)
  const first = await call(app, ACME, 'POST', '/v1/runs/r1/batches', { batchId: 'b1', calls })
  t.equal(first.status, 200)
  t.same(first.body.results.map((r: { status: string }) => r.status), ['ok', 'ok'])
  const operationId: string = first.body.results[0].details.receipt.operationId
  t.match(operationId, /^op_/)

  const snapshot = async (): Promise<unknown[]> => [
    (await call(app, ACME, 'GET', '/v1/runs/r1')).body,
    (await call(app, ACME, 'GET', '/v1/runs/r1/receipts')).body,
    (await call(app, ACME, 'GET', `/v1/receipts/${operationId}`)).body,
    (await call(app, ACME, 'GET', '/v1/runs/r1/summary')).body,
    ex.calls.length
  ]
  const before = await snapshot()
  // Time passes, so that a touch of the run would show in its expiresAt.
  clock.advance(15_000)

  const attempts: Array<[string, 'GET' | 'POST' | 'DELETE', string, unknown?]> = [
    ['read the run', 'GET', '/v1/runs/r1'],
    ["read the run's tools", 'GET', '/v1/runs/r1/tools'],
    ["read the run's summary", 'GET', '/v1/runs/r1/summary'],
    ["list the run's receipts", 'GET', '/v1/runs/r1/receipts'],
    ['read a receipt by operation id', 'GET', `/v1/receipts/${operationId}`],
    ['resubmit the same batch (same batchId, same calls)', 'POST', '/v1/runs/r1/batches', { batchId: 'b1', calls }],
    ['reuse the batchId with other calls', 'POST', '/v1/runs/r1/batches', { batchId: 'b1', calls: [calls[1]] }],
    ['send a new batch', 'POST', '/v1/runs/r1/batches', { batchId: 'b2', calls }],
    ['record a message', 'POST', '/v1/runs/r1/messages', { kind: 'steering' }],
    ['cancel the run', 'POST', '/v1/runs/r1/cancel'],
    ['end the run', 'DELETE', '/v1/runs/r1']
  ]
  for (const [what, method, url, body] of attempts) {
    const res = await call(app, RIVAL, method, url, body)
    t.equal(res.status, 404, `${what}: 404`)
    t.equal(res.body.code, 'run_not_found', `${what}: run_not_found`)
    t.notMatch(JSON.stringify(res.body), /acme|Wall/, `${what}: nothing of the owner leaks`)
  }
  // The same answers a run that never existed gets: nothing tells the two apart.
  for (const url of ['/v1/runs/nope', '/v1/runs/nope/summary', '/v1/runs/nope/receipts', '/v1/receipts/op_nope']) {
    const res = await call(app, RIVAL, 'GET', url)
    t.equal(res.body.code, 'run_not_found', `missing ${url}`)
  }
  // Run ids are one namespace: the rival cannot take the id over.
  t.equal((await call(app, RIVAL, 'POST', '/v1/runs', { runId: 'r1' })).status, 409)

  const after = await snapshot()
  const [runBefore, ...restBefore] = before as [Record<string, unknown>, ...unknown[]]
  const [runAfter, ...restAfter] = after as [Record<string, unknown>, ...unknown[]]
  const { expiresAt: expiresBefore, ...runBeforeKept } = runBefore
  const { expiresAt: expiresAfter, ...runAfterKept } = runAfter
  t.same(runAfterKept, runBeforeKept, "the owner's run is unchanged: state, counters, options")
  t.same(restAfter, restBefore, 'receipts, summary and executor calls are unchanged')
  t.equal(ex.calls.length, 2, 'nothing was dispatched for the rival')
  t.test("the rival's attempts do not even keep the run alive (expiresAt)", async (t) => {
    t.equal(expiresAfter, expiresBefore)
  })

  const again = await call(app, ACME, 'POST', '/v1/runs/r1/batches', { batchId: 'b1', calls })
  t.same(again.body, first.body, 'the owner still gets its stored answer on resubmission')
  t.equal((await call(app, ACME, 'GET', '/v1/runs/r1')).body.state, 'active')
})

t.test("a tenant's batch ids and operation ids are its own: the same ids in two tenants' runs do not meet", async (t) => {
  const ex = await startExecutor(t)
  ex.on('build', () => ({ status: 'committed', result: { label: 'ok' } }))
  const { app } = await buildTestApp(t, { keysDoc, tools: [tool('build', ex.url, { action: {} })] })
  t.equal((await call(app, ACME, 'POST', '/v1/runs', { runId: 'a1' })).status, 201)
  t.equal((await call(app, RIVAL, 'POST', '/v1/runs', { runId: 'b1' })).status, 201)
  const a = await call(app, ACME, 'POST', '/v1/runs/a1/batches', { batchId: 'same', calls: [calls[0]] })
  const b = await call(app, RIVAL, 'POST', '/v1/runs/b1/batches', { batchId: 'same', calls: [calls[0]] })
  t.equal(a.status, 200)
  t.equal(b.status, 200)
  t.equal(a.body.results[0].details.receipt.dispatch.disposition, 'dispatched')
  t.equal(b.body.results[0].details.receipt.dispatch.disposition, 'dispatched', "the rival's call is its own, not a replay of acme's")
  t.not(a.body.results[0].details.receipt.operationId, b.body.results[0].details.receipt.operationId)
  t.equal(ex.calls.length, 2)
  const aList = await call(app, ACME, 'GET', '/v1/runs/a1/receipts')
  t.equal(aList.body.receipts.length, 1)
  t.equal(aList.body.receipts[0].runId, 'a1')
  const cross = await call(app, ACME, 'GET', `/v1/receipts/${b.body.results[0].details.receipt.operationId as string}`)
  t.equal(cross.status, 404)
})

t.test('a run id used again once its run is gone, by another tenant or the same one, is a new run: no earlier run\'s receipt answers its calls', async (t) => {
  const ex = await startExecutor(t)
  ex.on('build', (c) => ({ status: 'committed', result: { label: `built for ${c.runId} #${ex.calls.length}` } }))
  // One run at a time: creating a run evicts the one before, so an id comes free at once.
  const { app } = await buildTestApp(t, { keysDoc, config: { maxRuns: 1 }, tools: [tool('build', ex.url, { action: {} })] })
  const action = [{ id: 'c1', name: 'build', arguments: { x: 1, y: 2 } }]
  const receiptOf = (res: { body: any }) => res.body.results[0].details.receipt

  t.equal((await call(app, ACME, 'POST', '/v1/runs', { runId: 'shared' })).status, 201)
  const first = receiptOf(await call(app, ACME, 'POST', '/v1/runs/shared/batches', { calls: action }))
  t.equal(first.dispatch.disposition, 'dispatched')

  t.equal((await call(app, RIVAL, 'POST', '/v1/runs', { runId: 'other' })).status, 201, "acme's run is evicted")
  t.equal((await call(app, RIVAL, 'POST', '/v1/runs', { runId: 'shared' })).status, 201, 'the id is free for another tenant')
  const rival = receiptOf(await call(app, RIVAL, 'POST', '/v1/runs/shared/batches', { calls: action }))
  t.equal(rival.dispatch.disposition, 'dispatched', "the same call in another tenant's run of that id is sent, not answered from acme's receipt")
  t.not(rival.operationId, first.operationId)
  t.not(rival.result.label, first.result.label)
  t.equal((await call(app, RIVAL, 'GET', `/v1/receipts/${first.operationId}`)).status, 404, "acme's receipt stays acme's")

  t.equal((await call(app, ACME, 'POST', '/v1/runs', { runId: 'shared2' })).status, 201)
  t.equal((await call(app, ACME, 'POST', '/v1/runs', { runId: 'shared' })).status, 201, 'and free for acme again')
  const again = receiptOf(await call(app, ACME, 'POST', '/v1/runs/shared/batches', { calls: action }))
  t.equal(again.dispatch.disposition, 'dispatched', "a new run of acme's with the old id sends the call too")
  t.not(again.operationId, first.operationId)
  t.equal(ex.calls.length, 3, 'each run sent its call once')
})
