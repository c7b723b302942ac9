import t, { type Test } from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'

type Result = { callId: string, status: string, content: string, isError: boolean, details: Record<string, any> }

const committed = { status: 'committed', result: { label: 'Wall #12', reward: 5 }, stateRevision: 42 }

async function setup (t: Test, action: Record<string, unknown> = {}, keysDoc?: unknown) {
  const ex = await startExecutor(t)
  ex.on('build', () => committed)
  const { app } = await buildTestApp(t, {
    tools: [
      tool('build', ex.url, { conflictKey: 'tile:{/x}', action }),
      tool('look', ex.url, { readOnly: true })
    ],
    ...(keysDoc === undefined ? {} : { keysDoc })
  })
  return { ex, app }
}

const PROJECTION = "{ 'action': intent.action, 'status': $lowercase(receipt.status), 'label': receipt.result.label }"

t.test('an action call gets one canonical receipt, sent with its operationId as Idempotency-Key', async (t) => {
  const { ex, app } = await setup(t)
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await post(app, '/v1/runs/r1/batches', { batchId: 'b1', calls: [{ id: 'call_2', name: 'build', arguments: { x: 1, y: 2, k: 'wall' } }] })
  const r: Result = res.body.results[0]
  t.equal(r.status, 'ok')
  const receipt = r.details.receipt
  t.match(receipt, {
    operationId: /^op_[0-9a-f]+$/,
    runId: 'r1',
    batchId: 'b1',
    callId: 'call_2',
    tool: 'build',
    intent: { action: 'build', arguments: { x: 1, y: 2, k: 'wall' } },
    status: 'committed',
    result: { label: 'Wall #12', reward: 5 },
    stateRevision: 42,
    dispatch: { disposition: 'dispatched', attempts: 1 }
  })
  t.same(receipt.timeline.map((e: { event: string }) => e.event), ['prepared', 'dispatched', 'responded'])
  t.ok(receipt.timing.dispatchedAt && receipt.timing.completedAt && typeof receipt.timing.durationMs === 'number')
  t.equal(ex.calls[0]!.idempotencyKey, receipt.operationId)
  t.equal(ex.calls[0]!.operationId, receipt.operationId)
  t.equal(r.content, JSON.stringify(receipt), 'without a projection the model sees the canonical receipt')

  const listed = await get(app, '/v1/runs/r1/receipts')
  t.same(listed.body.receipts, [receipt])
  const one = await get(app, `/v1/receipts/${receipt.operationId}`)
  t.same(one.body, receipt)
})

t.test('a projection shapes what the model sees while details keep the canonical receipt', async (t) => {
  const { app } = await setup(t, { projection: PROJECTION })
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'c1', name: 'build', arguments: { x: 1 } }] })
  const r: Result = res.body.results[0]
  t.equal(r.content, '{"action":"build","status":"committed","label":"Wall #12"}')
  t.equal(r.details.receipt.status, 'committed')
})

t.test('a resubmitted call is replayed from its receipt, never dispatched again, and projects byte for byte the same', async (t) => {
  for (const action of [{}, { projection: PROJECTION }]) {
    const { ex, app } = await setup(t, action)
    await post(app, '/v1/runs', { runId: 'r1', limits: { exactToolRepeatAdvisoryThreshold: 0 } })
    const call = { id: 'call_9', name: 'build', arguments: { x: 3 } }
    const first = (await post(app, '/v1/runs/r1/batches', { calls: [call] })).body.results[0] as Result
    const again = (await post(app, '/v1/runs/r1/batches', { calls: [call] })).body.results[0] as Result
    t.equal(ex.calls.length, 1, 'the executor saw the operation once')
    t.equal(again.content, first.content)
    t.equal(again.details.receipt.dispatch.disposition, 'replayed')
    t.equal(again.details.receipt.operationId, first.details.receipt.operationId)
    const otherArgs = (await post(app, '/v1/runs/r1/batches', { calls: [{ ...call, arguments: { x: 4 } }] })).body.results[0] as Result
    t.not(otherArgs.details.receipt.operationId, first.details.receipt.operationId, 'a reused call id with other arguments is another operation')
    t.equal(ex.calls.length, 2)
  }
})

t.test('a resubmitted batch answers the stored response and dispatches nothing', async (t) => {
  const { ex, app } = await setup(t)
  await post(app, '/v1/runs', { runId: 'r1' })
  const body = { batchId: 'b-7', calls: [{ id: 'a', name: 'build', arguments: { x: 1 } }, { id: 'b', name: 'look', arguments: { x: 1 } }] }
  const first = await post(app, '/v1/runs/r1/batches', body)
  const second = await post(app, '/v1/runs/r1/batches', body)
  t.equal(second.status, 200)
  t.same(second.body, first.body)
  t.equal(ex.calls.length, 2)
  const byHeader = await post(app, '/v1/runs/r1/batches', { calls: body.calls }, { 'idempotency-key': 'b-7' })
  t.same(byHeader.body, first.body, 'the Idempotency-Key header names the batch too')
  const reused = await post(app, '/v1/runs/r1/batches', { batchId: 'b-7', calls: [{ id: 'a', name: 'look', arguments: { x: 2 } }] })
  t.equal(reused.status, 422)
  t.equal(reused.body.code, 'batch_id_reused')
  const run = await get(app, '/v1/runs/r1')
  t.equal(run.body.counters.turns, 1, 'replays are not turns')
})

t.test('a resubmission while the first is still running gets run_busy', async (t) => {
  const { ex, app } = await setup(t)
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  ex.on('look', async () => { await gate; return { content: 'ok' } })
  await post(app, '/v1/runs', { runId: 'r1' })
  const body = { batchId: 'slow', calls: [{ id: 'a', name: 'look', arguments: { x: 1 } }] }
  const first = post(app, '/v1/runs/r1/batches', body)
  while (ex.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  const second = await post(app, '/v1/runs/r1/batches', body)
  t.equal(second.status, 409)
  t.equal(second.body.code, 'run_busy')
  release()
  t.equal((await first).status, 200)
  t.equal(ex.calls.length, 1)
})

t.test('an executor that fails after receiving the action leaves an uncertain receipt', async (t) => {
  const { ex, app } = await setup(t)
  ex.on('build', (_c, _req, reply) => reply.code(503).send({ error: 'busy' }))
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'build', arguments: { x: 1 } }, { id: 'b', name: 'build', arguments: { x: 1, y: 1 } }] })
  t.equal(res.body.results[0].status, 'uncertain')
  t.equal(res.body.results[0].details.receipt.status, 'uncertain')
  t.equal(res.body.results[1].status, 'blocked', 'a later write with the same key is blocked')
  t.equal(res.body.results[1].details.blockedBy, 'a')
  t.equal(ex.calls.length, 1)
})

t.test('an executor refusal is a rejected receipt and an error result', async (t) => {
  const { ex, app } = await setup(t)
  ex.on('build', () => ({ status: 'rejected', result: { reason: 'occupied' } }))
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'build', arguments: { x: 1 } }] })
  t.equal(res.body.results[0].status, 'error')
  t.equal(res.body.results[0].isError, true)
  t.equal(res.body.results[0].details.receipt.status, 'rejected')
  t.same(res.body.results[0].details.receipt.result, { reason: 'occupied' })
})

const FAILURES: Array<[string, string]> = [
  ['throws', "$error('boom')"],
  ['gives undefined', 'receipt.nothing'],
  ['gives null', 'null'],
  ['gives an array', '[1, 2]'],
  ['gives a string', "'text'"],
  ['gives a number', '42'],
  ['holds a non-finite number', "{ 'a': 1/0 }"],
  ['calls $now', "{ 'a': $now() }"],
  ['calls $millis', "{ 'a': $millis() }"],
  ['calls $random', "{ 'a': $random() }"],
  ['is over the size limit', "{ 'a': $pad('', 5000, 'x') }"]
]

for (const [kind, projection] of FAILURES) {
  t.test(`a projection that ${kind} fails the call, closes the batch and terminates the run`, async (t) => {
    const { ex, app } = await setup(t, { projection })
    await post(app, '/v1/runs', { runId: 'r1' })
    const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'build', arguments: { x: 1 } }, { id: 'b', name: 'look', arguments: { x: 1 } }] })
    const [a, b] = res.body.results as Result[]
    t.equal(a!.status, 'projection_failed')
    t.equal(a!.isError, true)
    t.equal(a!.content, '{"error":"projection_failed"}')
    t.equal(a!.details.receipt.status, 'committed', 'the action did commit; the receipt says so')
    t.equal(b!.status, 'cancelled', 'calls not yet started are cancelled')
    t.equal(res.body.continue, false)
    t.same(res.body.run, { state: 'terminated', terminationReason: 'projection_failed' })
    t.equal(ex.calls.length, 1)
  })
}

t.test('a projection exactly at maxModelReceiptChars passes; one character more fails', async (t) => {
  // {"a":"x…x"} is 8 characters plus the x's.
  for (const [n, expected] of [[92, 'ok'], [93, 'projection_failed']] as const) {
    const { app } = await setup(t, { projection: `{ 'a': $pad('', ${n}, 'x') }`, maxModelReceiptChars: 100 })
    await post(app, '/v1/runs', { runId: 'r1' })
    const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'build', arguments: { x: 1 } }] })
    t.equal(res.body.results[0].status, expected, `${8 + n} characters`)
    if (expected === 'ok') t.equal(res.body.results[0].content.length, 100)
  }
})

t.test("one tenant cannot see another tenant's receipts", async (t) => {
  const keysDoc = {
    keys: [
      { key: 'key-of-tenant-a-0123456789', tenant: 'a', roles: ['orchestrator'] },
      { key: 'key-of-tenant-b-0123456789', tenant: 'b', roles: ['orchestrator'] }
    ]
  }
  const { app } = await setup(t, {}, keysDoc)
  const A = { authorization: 'Bearer key-of-tenant-a-0123456789' }
  const B = { authorization: 'Bearer key-of-tenant-b-0123456789' }
  await post(app, '/v1/runs', { runId: 'ra' }, A)
  const res = await post(app, '/v1/runs/ra/batches', { calls: [{ id: 'a', name: 'build', arguments: { x: 1 } }] }, A)
  const op = res.body.results[0].details.receipt.operationId
  t.equal((await get(app, `/v1/receipts/${op}`, A)).status, 200)
  const foreign = await get(app, `/v1/receipts/${op}`, B)
  t.equal(foreign.status, 404)
  t.equal(foreign.body.code, 'run_not_found')
  const list = await get(app, '/v1/runs/ra/receipts', B)
  t.equal(list.status, 404)
  t.equal(list.body.code, 'run_not_found')
})
