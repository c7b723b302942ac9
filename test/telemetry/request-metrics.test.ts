import t from 'tap'
import { buildTestApp, holdCalls, post, sleep, startExecutor, tool } from '../helper.js'
import { ssePost, waitFor } from '../schedule/harness.js'
import { scrape } from './scrape.js'

t.test('requests are counted by route pattern, method and status, never by their raw URL, and timed by route', async (t) => {
  const { app } = await buildTestApp(t)
  await post(app, '/v1/runs', { runId: 'run-zz71' })
  await app.inject({ method: 'GET', url: '/v1/runs/run-zz71' })
  await app.inject({ method: 'GET', url: '/v1/runs/missing-zz72' })
  await app.inject({ method: 'GET', url: '/no/such/path-zz73' })
  const m = await scrape(app)
  t.equal(m.value('toolgate_http_requests_total', { route: '/v1/runs', method: 'POST', status: '201' }), 1)
  t.equal(m.value('toolgate_http_requests_total', { route: '/v1/runs/:runId', method: 'GET', status: '200' }), 1)
  t.equal(m.value('toolgate_http_requests_total', { route: '/v1/runs/:runId', method: 'GET', status: '404' }), 1)
  t.equal(m.value('toolgate_http_requests_total', { route: '(unmatched)', method: 'GET', status: '404' }), 1, 'a path no route matches gets one fixed label')
  t.equal(m.value('toolgate_http_request_duration_seconds_count', { route: '/v1/runs/:runId' }), 2)
  t.notMatch(m.text, /zz7/, 'no id or raw path is a label')
})

t.test('replays, reported tokens, and runs created and ended are counted; a replay adds no tokens', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  const before = await scrape(app)
  for (const name of ['toolgate_batch_replays_total', 'toolgate_runs_created_total', 'toolgate_runs_ended_total', 'toolgate_sse_clients_gone_total']) t.ok(before.has(name), `${name} is exported from the start`)
  t.ok(before.has('toolgate_tokens_total', { kind: 'input' }) && before.has('toolgate_tokens_total', { kind: 'output' }))
  await post(app, '/v1/runs', { runId: 'r1' })
  const body = { batchId: 'b1', calls: [{ id: 'a', name: 'look', arguments: {} }], usage: { inputTokens: 120, outputTokens: 30 } }
  t.equal((await post(app, '/v1/runs/r1/batches', body)).status, 200)
  t.equal((await post(app, '/v1/runs/r1/batches', body)).status, 200, 'resent')
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/runs/r1' })).statusCode, 200)
  const m = await scrape(app)
  t.equal(m.value('toolgate_batch_replays_total'), 1)
  t.equal(m.value('toolgate_tokens_total', { kind: 'input' }), 120)
  t.equal(m.value('toolgate_tokens_total', { kind: 'output' }), 30)
  t.equal(m.value('toolgate_runs_created_total'), 1)
  t.equal(m.value('toolgate_runs_ended_total'), 1)
  t.equal(m.value('toolgate_tool_calls_total', { tool: 'look', status: 'ok' }), 1, 'the replay ran nothing')
})

t.test('a streamed batch whose client goes away is counted as an SSE client gone', async (t) => {
  const ex = await startExecutor(t)
  const held = holdCalls(ex, 'slow')
  const { app } = await buildTestApp(t, { tools: [tool('slow', ex.url, { readOnly: true })] })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await ssePost(`${base}/v1/runs/r1/batches`, { calls: [{ id: 'a', name: 'slow', arguments: {} }] })
  await held.started
  res.abort()
  const connections = (): Promise<number> => new Promise((resolve) => { app.server.getConnections((_e, n) => { resolve(n) }) })
  for (let i = 0; i < 500 && (await connections()) > 0; i++) await sleep(10)
  held.release()
  // The batch ends once the executor answers; its line (and count) is written then.
  await waitFor(() => app.services.engine.inFlight === 0, 'the batch to end')
  let gone = 0
  for (let i = 0; i < 100 && gone === 0; i++) {
    gone = (await scrape(app)).value('toolgate_sse_clients_gone_total')
    if (gone === 0) await sleep(20)
  }
  t.equal(gone, 1)
})
