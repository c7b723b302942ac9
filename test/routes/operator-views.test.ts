/**
 * What the operator page reads, through the API: runs filtered by state
 * (paged exactly), runs and batches read by an operator key without
 * arguments or content, and the approvals inbox's context for a person
 * deciding (the tool's description, the batch's other calls, the run's
 * latest calls), never another call's arguments.
 */
import t from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'

const CANARY = 'canary-operator-view-90ab'
const keysDoc = {
  keys: [
    { key: 'acme-view-orchestrator', tenant: 'acme', roles: ['orchestrator'] },
    { key: 'acme-view-operator', tenant: 'acme', roles: ['operator'] },
    { key: 'acme-view-approver', tenant: 'acme', roles: ['approver'] }
  ]
}
const orchestrator = { authorization: 'Bearer acme-view-orchestrator' }
const operator = { authorization: 'Bearer acme-view-operator' }
const approver = { authorization: 'Bearer acme-view-approver' }

t.test('runs filtered by state come in exact pages, an operator key may list them, and a bad state is a 400', async (t) => {
  const { app } = await buildTestApp(t, { keysDoc })
  for (let i = 0; i < 7; i++) await post(app, '/v1/runs', { runId: `run-${i}` }, orchestrator)
  for (const i of [1, 4, 5]) await app.inject({ method: 'DELETE', url: `/v1/runs/run-${i}`, headers: orchestrator })
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res = await get(app, `/v1/runs?state=ended&limit=1${cursor === null ? '' : `&cursor=${cursor}`}`, operator)
    t.equal(res.status, 200)
    t.ok(res.body.runs.length <= 1)
    for (const r of res.body.runs) {
      t.equal(r.state, 'ended')
      t.match(r.lastActiveAt, /^\d{4}-\d\d-\d\dT/)
      seen.push(r.runId)
    }
    cursor = res.body.next
  } while (cursor !== null && ++pages < 20)
  t.strictSame(seen.sort(), ['run-1', 'run-4', 'run-5'], 'every ended run once, across pages')
  const active = await get(app, '/v1/runs?state=active&limit=50', operator)
  t.equal(active.body.runs.length, 4)
  t.equal(active.body.next, null)
  const bad = await get(app, '/v1/runs?state=sleeping', operator)
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'invalid_request')
})

t.test("an operator key reads a run's batches without content, messages, receipts or arguments", async (t) => {
  const ex = await startExecutor(t)
  ex.on('look', () => ({ content: `seen ${CANARY}` }))
  ex.on('paint', () => ({ content: 'painted' }))
  const { app } = await buildTestApp(t, { keysDoc, tools: [tool('look', ex.url, { readOnly: true }), tool('paint', ex.url, { requiresApproval: true })] })
  await post(app, '/v1/runs', { runId: 'r1' }, orchestrator)
  const done = await post(app, '/v1/runs/r1/batches', { batchId: 'b1', calls: [{ id: 'c1', name: 'look', arguments: { k: CANARY } }] }, orchestrator)
  t.equal(done.body.results[0].status, 'ok')
  const held = await post(app, '/v1/runs/r1/batches', { batchId: 'b2', calls: [{ id: 'c2', name: 'paint', arguments: { k: CANARY } }] }, orchestrator)
  t.equal(held.status, 202)

  t.equal((await get(app, '/v1/runs/r1', operator)).status, 200)
  t.equal((await get(app, '/v1/runs/r1/batches', operator)).status, 200)
  const finished = await get(app, '/v1/runs/r1/batches/b1', operator)
  t.equal(finished.status, 200)
  t.match(finished.body.results[0], { callId: 'c1', name: 'look', status: 'ok', details: { epoch: 0 } })
  t.notOk('content' in finished.body.results[0], 'no content')
  t.notOk(JSON.stringify(finished.body).includes(CANARY), 'no argument and no result text')
  const waiting = await get(app, '/v1/runs/r1/batches/b2', operator)
  t.equal(waiting.body.state, 'awaiting_approval')
  t.equal(waiting.body.approvals[0].callId, 'c2')
  t.notOk(JSON.stringify(waiting.body).includes(CANARY), 'no held arguments')
  // The orchestrator still reads them whole, byte for byte.
  const whole = await get(app, '/v1/runs/r1/batches/b1', orchestrator)
  t.ok(JSON.stringify(whole.body).includes(CANARY))
  // An operator still may not send batches or read receipts.
  t.equal((await post(app, '/v1/runs/r1/batches', { calls: [] }, operator)).status, 403)
  t.equal((await get(app, '/v1/runs/r1/receipts', operator)).status, 403)
})

t.test("the inbox tells the person deciding what the tool is, the batch's other calls and the run's latest calls, without their arguments", async (t) => {
  const ex = await startExecutor(t)
  ex.on('look', () => ({ content: 'ok' }))
  ex.on('paint', () => ({ content: 'painted' }))
  const { app, logs } = await buildTestApp(t, {
    keysDoc,
    tools: [tool('look', ex.url, { readOnly: true }), tool('paint', ex.url, { requiresApproval: true, description: 'Paints a wall.' })]
  })
  await post(app, '/v1/runs', { runId: 'r1' }, orchestrator)
  for (let turn = 1; turn <= 3; turn++) {
    await post(app, '/v1/runs/r1/batches', { batchId: `t${turn}`, calls: [{ id: `t${turn}a`, name: 'look', arguments: { k: CANARY } }, { id: `t${turn}b`, name: 'look', arguments: {} }] }, orchestrator)
  }
  const held = await post(app, '/v1/runs/r1/batches', {
    batchId: 't4',
    calls: [{ id: 'p1', name: 'paint', arguments: { k: 'blue' } }, { id: 'p2', name: 'paint', arguments: { k: CANARY } }, { id: 'l1', name: 'look', arguments: { k: CANARY } }, { id: 'x1', name: 'fly', arguments: {} }]
  }, orchestrator)
  t.equal(held.status, 202)
  await post(app, '/v1/runs/r1/batches/t4/approvals', { decisions: [{ callId: 'p2', approve: false, reason: 'no' }] }, approver)
  const inbox = await get(app, '/v1/approvals', approver)
  t.equal(inbox.status, 200)
  t.equal(inbox.body.approvals.length, 1)
  const [entry] = inbox.body.approvals
  t.same(entry.arguments, { k: 'blue' }, 'the held call\'s own arguments, as before')
  t.strictSame(entry.context, {
    description: 'Paints a wall.',
    batch: [
      { callId: 'p2', tool: 'paint', status: 'denied' },
      { callId: 'l1', tool: 'look', status: 'waiting' },
      { callId: 'x1', tool: 'fly', status: 'rejected' }
    ],
    recent: [
      { batchId: 't1', turn: 1, callId: 't1b', tool: 'look', status: 'ok' },
      { batchId: 't2', turn: 2, callId: 't2a', tool: 'look', status: 'ok' },
      { batchId: 't2', turn: 2, callId: 't2b', tool: 'look', status: 'ok' },
      { batchId: 't3', turn: 3, callId: 't3a', tool: 'look', status: 'ok' },
      { batchId: 't3', turn: 3, callId: 't3b', tool: 'look', status: 'ok' }
    ]
  })
  t.notOk(JSON.stringify(entry.context).includes(CANARY), "no other call's arguments")
  t.notOk(logs.join('').includes(CANARY), 'no argument in the logs')
})

t.test('a call that waited for its key names the call holding it; conflict keys are in results, never in events or logs', async (t) => {
  const ex = await startExecutor(t)
  ex.on('look', async () => { await new Promise((resolve) => setTimeout(resolve, 5)); return { content: 'ok' } })
  const { app, logs } = await buildTestApp(t, { keysDoc, tools: [tool('look', ex.url, { readOnly: true, conflictKey: 'tile:{/k}' })] })
  await post(app, '/v1/runs', { runId: 'r1', events: 'lifecycle' }, orchestrator)
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: { k: CANARY } }, { id: 'b', name: 'look', arguments: { k: CANARY } }] }, orchestrator)
  t.equal(res.body.results[0].details.conflictKey, `tile:${CANARY}`)
  t.strictSame(res.body.results[1].details.waited, { for: 'conflict_key', callId: 'a' })
  t.notOk(JSON.stringify(res.body.events).includes(CANARY), 'no conflict key in the events')
  t.notOk(logs.join('').includes(CANARY), 'nor in the logs')
})
