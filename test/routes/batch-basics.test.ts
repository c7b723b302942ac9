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
