/**
 * The read routes over runs and batches: GET /v1/runs, GET /v1/runs/{runId}/batches
 * and GET /v1/runs/{runId}/batches/{batchId}, under the orchestrator role and
 * the tenant rules every run route follows.
 */
import t from 'tap'
import { buildTestApp, get, post, startExecutor, tool, type ExecutorCall } from '../helper.js'
import { callGates, waitFor } from '../schedule/harness.js'

const ex = await startExecutor(t)
const { hold, waitFor: held } = callGates()
ex.on('poke', async (call: ExecutorCall) => {
  await held(call)
  return { content: `did ${call.callId}` }
})
const keysDoc = {
  keys: [
    { key: 'acme-key', tenant: 'acme', roles: ['orchestrator'] },
    { key: 'rival-key', tenant: 'rival', roles: ['orchestrator'] },
    { key: 'admin-key', tenant: 'acme', roles: ['admin'] }
  ]
}
const { app } = await buildTestApp(t, { keysDoc, tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })
const acme = { authorization: 'Bearer acme-key' }
const rival = { authorization: 'Bearer rival-key' }
const CANARY = 'canary-argument-7f3a'

t.test("a tenant pages through its own runs, most recently used first, and never sees another tenant's", async (t) => {
  for (const runId of ['l1', 'l2', 'l3']) t.equal((await post(app, '/v1/runs', { runId }, acme)).status, 201)
  await post(app, '/v1/runs', { runId: 'x1' }, rival)
  await post(app, '/v1/runs/l1/messages', { kind: 'steering' }, acme)
  const first = await get(app, '/v1/runs?limit=2', acme)
  t.equal(first.status, 200)
  t.strictSame(first.body.runs.map((r: { runId: string }) => r.runId), ['l1', 'l3'])
  t.match(first.body.runs[0], { state: 'active', counters: { turns: 0, toolCalls: 0, totalTokens: 0 }, limits: { exactToolRepeatAdvisoryThreshold: 3 } })
  t.type(first.body.next, 'string')
  const second = await get(app, `/v1/runs?limit=2&cursor=${encodeURIComponent(first.body.next)}`, acme)
  t.strictSame(second.body.runs.map((r: { runId: string }) => r.runId).filter((id: string) => id.startsWith('l')), ['l2'])
  const theirs = await get(app, '/v1/runs?limit=500', rival)
  t.strictSame(theirs.body.runs.map((r: { runId: string }) => r.runId), ['x1'])
})

t.test('the runs list refuses a cursor it did not give, a bad limit, and a key without the orchestrator role', async (t) => {
  const bad = await get(app, '/v1/runs?cursor=bm90LWEtY3Vyc29y', acme)
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'invalid_request')
  t.equal((await get(app, '/v1/runs?limit=0', acme)).body.code, 'invalid_request')
  t.equal((await get(app, '/v1/runs?limit=501', acme)).body.code, 'invalid_request')
  t.equal((await get(app, '/v1/runs', { authorization: 'Bearer admin-key' })).status, 403)
  t.equal((await get(app, '/v1/runs')).status, 401)
})

t.test("a run's batches list turn, call count and statuses, latest first, with the batch in flight as running", async (t) => {
  await post(app, '/v1/runs', { runId: 'b1' }, acme)
  const one = await post(app, '/v1/runs/b1/batches', { batchId: 't1', calls: [{ id: 'c1', name: 'look', arguments: { k: CANARY } }, { id: 'c2', name: 'fly' }] }, acme)
  t.equal(one.status, 200)
  await post(app, '/v1/runs/b1/batches', { batchId: 't2', calls: [{ id: 'c1', name: 'look', arguments: { k: CANARY } }] }, acme)
  const gate = hold('b1', 'w1')
  const pending = post(app, '/v1/runs/b1/batches', { batchId: 't3', calls: [{ id: 'w1', name: 'poke', arguments: { k: CANARY } }] }, acme)
  await waitFor(() => ex.calls.some((c) => c.runId === 'b1' && c.callId === 'w1'), 'the write to be running')

  const list = await get(app, '/v1/runs/b1/batches', acme)
  t.equal(list.status, 200)
  t.match(list.body.batches, [
    { batchId: 't3', state: 'running' },
    { batchId: 't2', state: 'completed', turn: 2, calls: 1, statuses: { ok: 1 } },
    { batchId: 't1', state: 'completed', turn: 1, calls: 2, statuses: { ok: 1, rejected: 1 } }
  ])
  t.equal(list.body.next, null)
  t.notOk(JSON.stringify(list.body).includes(CANARY), 'no arguments in the list')
  t.strictSame((await get(app, '/v1/runs/b1/batches/t3', acme)).body, { runId: 'b1', batchId: 't3', state: 'running' })

  const paged = await get(app, '/v1/runs/b1/batches?limit=1', acme)
  t.strictSame(paged.body.batches.map((b: { batchId: string }) => b.batchId), ['t3', 't2'], 'the running batch comes on top of the first page')
  t.equal(paged.body.next, 2)
  const rest = await get(app, '/v1/runs/b1/batches?limit=1&beforeTurn=2', acme)
  t.strictSame(rest.body.batches.map((b: { batchId: string }) => b.batchId), ['t1'])
  t.equal(rest.body.next, null)

  gate.open()
  t.equal((await pending).status, 200)
  t.match((await get(app, '/v1/runs/b1/batches?limit=1', acme)).body.batches, [{ batchId: 't3', state: 'completed', turn: 3, statuses: { ok: 1 } }])
})

t.test('a finished batch reads back byte for byte as the batch request answered it', async (t) => {
  await post(app, '/v1/runs', { runId: 'g1' }, acme)
  const sent = await app.inject({ method: 'POST', url: '/v1/runs/g1/batches', headers: { ...acme, 'content-type': 'application/json' }, payload: { batchId: 'only', calls: [{ id: 'c1', name: 'look', arguments: {} }] } })
  const read = await app.inject({ method: 'GET', url: '/v1/runs/g1/batches/only', headers: acme })
  t.equal(read.statusCode, 200)
  t.match(read.headers['content-type'], /application\/json/)
  t.equal(read.body, sent.body)
})

t.test("another tenant gets run_not_found for a run's batches; an unknown batch is batch_not_found", async (t) => {
  await post(app, '/v1/runs', { runId: 'p1' }, acme)
  await post(app, '/v1/runs/p1/batches', { batchId: 'bb', calls: [{ id: 'c1', name: 'look' }] }, acme)
  for (const url of ['/v1/runs/p1/batches', '/v1/runs/p1/batches/bb']) {
    const res = await get(app, url, rival)
    t.equal(res.status, 404, url)
    t.equal(res.body.code, 'run_not_found', url)
  }
  const missing = await get(app, '/v1/runs/p1/batches/nope', acme)
  t.equal(missing.status, 404)
  t.equal(missing.body.code, 'batch_not_found')
  t.equal((await get(app, '/v1/runs/p1/batches/bad%20id', acme)).body.code, 'invalid_request')
})
