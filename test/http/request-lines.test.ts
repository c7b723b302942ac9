/**
 * Each request's log line: once per request (streamed batches included),
 * with the request id the caller sent or a new one, returned on the answer,
 * the tenant and key name (never the key), `durationMs`, and probes and
 * scrapes at debug.
 */
import t from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { collect, ssePost } from '../schedule/harness.js'

interface Line { level: number, msg: string, [key: string]: unknown }
const lines = (logs: string[]): Line[] => logs.map((l) => JSON.parse(l) as Line)

t.test('a streamed batch is logged once, as a batch with stream: true', async (t) => {
  const ex = await startExecutor(t)
  const { app, logs } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await ssePost(`${base}/v1/runs/r1/batches`, { batchId: 'b1', calls: [{ id: 'a', name: 'look', arguments: {} }] }, { 'x-request-id': 'sse-req-1' })
  t.equal(res.headers['x-request-id'], 'sse-req-1', 'the stream carries the request id too')
  await collect(res.events)
  await app.close()
  const mine = lines(logs).filter((l) => l.reqId === 'sse-req-1' && l.level >= 30)
  t.equal(mine.length, 1, 'one line at info for the streamed batch')
  t.match(mine[0], { msg: 'batch completed', stream: true, clientGone: false, runId: 'r1', batchId: 'b1', status: 200 })
})

t.test("a valid X-Request-Id is the request's id and comes back; an invalid or overlong one is replaced", async (t) => {
  const { app, logs } = await buildTestApp(t)
  const given = await get(app, '/v1/runs/nope', { 'x-request-id': 'client-abc.123' })
  t.equal(given.status, 404)
  t.equal(given.headers['x-request-id'], 'client-abc.123', 'a problem answer carries it')
  t.match(lines(logs).find((l) => l.reqId === 'client-abc.123' && l.msg === 'request'), { status: 404, route: '/v1/runs/:runId' })

  for (const bad of ['has space', 'x'.repeat(129), 'quote"d', '']) {
    const res = await get(app, '/healthz', { 'x-request-id': bad })
    const id = String(res.headers['x-request-id'])
    t.not(id, bad, `${JSON.stringify(bad.slice(0, 20))} is not taken`)
    t.match(id, /^[0-9a-f-]{36}$/, 'a new UUID instead')
  }
  t.equal((await get(app, '/healthz', { 'x-request-id': 'x'.repeat(128) })).headers['x-request-id'], 'x'.repeat(128), '128 characters are taken')
  const a = (await get(app, '/healthz')).headers['x-request-id']
  const b = (await get(app, '/healthz')).headers['x-request-id']
  t.not(a, b, 'without one, each request gets its own')
})

t.test("a request's line names its tenant and key name, never the key, and says durationMs", async (t) => {
  const key = 'named-key-LINECANARY-0123456789'
  const { app, logs } = await buildTestApp(t, { keysDoc: { keys: [{ key, name: 'ci-bot', tenant: 'acme', roles: ['orchestrator'] }] } })
  const created = await post(app, '/v1/runs', {}, { authorization: `Bearer ${key}`, 'x-request-id': 'named-1' })
  t.equal(created.status, 201)
  const line = lines(logs).find((l) => l.reqId === 'named-1')
  t.match(line, { msg: 'request', tenant: 'acme', keyName: 'ci-bot', status: 201 })
  t.type(line?.durationMs, 'number')
  t.notOk('ms' in (line ?? {}), 'one duration field name')
  t.notMatch(logs.join('\n'), /LINECANARY/)
})

t.test('probes and scrapes log at debug; their failures and every other request at info', async (t) => {
  const { app, logs } = await buildTestApp(t)
  await get(app, '/healthz', { 'x-request-id': 'probe-1' })
  await get(app, '/readyz', { 'x-request-id': 'probe-2' })
  await get(app, '/metrics', { 'x-request-id': 'scrape-1' })
  await post(app, '/v1/runs', {}, { 'x-request-id': 'work-1' })
  const level = (id: string): number | undefined => lines(logs).find((l) => l.reqId === id)?.level
  t.equal(level('probe-1'), 20)
  t.equal(level('probe-2'), 20)
  t.equal(level('scrape-1'), 20)
  t.equal(level('work-1'), 30)
  app.services.draining = true
  await get(app, '/readyz', { 'x-request-id': 'probe-3' })
  t.equal(level('probe-3'), 30, 'a probe that answers 503 is worth a line at info')
})
