import t from 'tap'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'

t.test('a batch answers one result per call, in source order, through a real executor', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })
  const run = await post(app, '/v1/runs', { runId: 'r1' })
  t.equal(run.status, 201)
  const res = await post(app, '/v1/runs/r1/batches', {
    calls: [
      { id: 'a', name: 'look', arguments: '{"x": 1}' },
      { id: 'b', name: 'poke', arguments: { x: 2 } },
      { id: 'c', name: 'missing', arguments: {} }
    ]
  })
  t.equal(res.status, 200)
  t.same(res.body.results.map((r: { callId: string, status: string }) => [r.callId, r.status]), [['a', 'ok'], ['b', 'ok'], ['c', 'rejected']])
  t.equal(res.body.results[2].details.reason, 'unknown_tool')
  t.equal(ex.calls.length, 2)
  t.equal(res.body.turn, 1)
  t.equal(res.body.continue, true)
})

t.test("the caller's W3C trace context reaches the executors", async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  await post(app, '/v1/runs', { runId: 'traced' })
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const res = await post(app, '/v1/runs/traced/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }] },
    { traceparent: `00-${traceId}-00f067aa0ba902b7-01` })
  t.equal(res.status, 200)
  t.match(ex.calls[0]!.traceparent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]$`))
})

t.test('a run whose timeoutMs is beyond what a timer can hold is not cut short', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  await post(app, '/v1/runs', { runId: 'long', limits: { timeoutMs: 3_000_000_000 } })
  const res = await post(app, '/v1/runs/long/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }, { id: 'b', name: 'look', arguments: { x: 1 } }] })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok'])
  t.equal(res.body.run.state, 'active')
})
