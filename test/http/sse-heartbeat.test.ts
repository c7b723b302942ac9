/**
 * A streamed batch keeps idle proxies from cutting it: a `retry:` at the
 * start, an `id:` on each event, and a comment heartbeat while nothing else is sent.
 */
import t from 'tap'
import { Client } from 'undici'
import { buildTestApp, holdCalls, post, startExecutor, tool } from '../helper.js'

t.test('a quiet stream sends comment heartbeats, each event has an increasing id, and retry comes first', async (t) => {
  const ex = await startExecutor(t)
  const { started, release } = holdCalls(ex, 'look', { content: 'done' })
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })], config: { sseHeartbeatSeconds: 1 } })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  await post(app, '/v1/runs', { runId: 'r1', events: 'lifecycle' })
  const client = new Client(base)
  t.teardown(() => client.close())
  const res = await client.request({
    path: '/v1/runs/r1/batches',
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ calls: [{ id: 'a', name: 'look', arguments: {} }] })
  })
  res.body.setEncoding('utf8')
  let text = ''
  await started
  for await (const chunk of res.body) {
    text += chunk as string
    // The call is held at the executor: only a heartbeat can come now. Then let it answer.
    if (text.includes(': heartbeat\n\n')) release()
  }
  t.match(text, /^retry: \d+\n\n/, 'retry first')
  t.match(text, /: heartbeat\n\n/, 'a heartbeat while the call ran')
  const ids = [...text.matchAll(/^id: (\d+)\nevent: /gm)].map((m) => Number(m[1]))
  t.ok(ids.length >= 3, 'every event has an id')
  t.strictSame(ids, ids.map((_, i) => i), 'ids count up from 0')
  t.match(text, /event: batch.completed\n/)
})

t.test('heartbeats can be turned off', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })], config: { sseHeartbeatSeconds: 0 } })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  await post(app, '/v1/runs', { runId: 'r1' })
  const client = new Client(base)
  t.teardown(() => client.close())
  const res = await client.request({
    path: '/v1/runs/r1/batches',
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ calls: [{ id: 'a', name: 'look', arguments: {} }] })
  })
  const text = await res.body.text()
  t.notMatch(text, /heartbeat/)
  t.match(text, /event: batch.completed/)
})
