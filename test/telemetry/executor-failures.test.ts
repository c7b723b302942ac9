/**
 * An executor that refuses connections, answers 4xx or 5xx, or answers
 * isError writes one line for the call, with its cause (never its
 * arguments or the answer's body), and counts under its cause.
 */
import t from 'tap'
import { buildTestApp, freePort, post, startExecutor, tool } from '../helper.js'
import { scrape } from './scrape.js'

const CANARY = 'canary-zz4419'

t.test('each executor failure writes one line with its cause and counts under it; the arguments appear nowhere', async (t) => {
  const ex = await startExecutor(t)
  ex.on('picky', (_c, _r, reply) => reply.code(422).send({ content: `refused ${CANARY}` }))
  ex.on('sulky', () => ({ content: `no ${CANARY}`, isError: true }))
  ex.on('broken', (_c, _r, reply) => reply.code(503).send({ error: CANARY }))
  const closed = `http://127.0.0.1:${await freePort()}`
  const { app, logs } = await buildTestApp(t, {
    tools: [tool('picky', ex.url, { readOnly: true }), tool('sulky', ex.url, { readOnly: true }), tool('broken', ex.url), tool('away', closed, { readOnly: true })]
  })
  await post(app, '/v1/runs', { runId: 'r1' })
  const args = { secret: CANARY }
  const res = await post(app, '/v1/runs/r1/batches', {
    calls: ['away', 'picky', 'sulky', 'broken'].map((name) => ({ id: `c-${name}`, name, arguments: args }))
  }, { 'x-request-id': 'req-fail-1' })
  t.equal(res.status, 200)
  t.strictSame(res.body.results.map((r: { status: string }) => r.status), ['error', 'error', 'error', 'uncertain'])

  const lines = logs.map((l) => JSON.parse(l) as Record<string, unknown>)
  // Other lines may name the call too (a loop detector, the uncertain-write service): one is the failure's.
  const FAILURE_LINES = ['tool call failed', 'write outcome uncertain']
  const of = (callId: string): Array<Record<string, unknown>> => lines.filter((l) => l.callId === callId && FAILURE_LINES.includes(l.msg as string))
  const expected: Array<[string, string, string, number | undefined, number]> = [
    ['c-away', 'tool call failed', 'connect_refused', undefined, 40],
    ['c-picky', 'tool call failed', 'http_4xx', 422, 30],
    ['c-sulky', 'tool call failed', 'is_error', 200, 30],
    ['c-broken', 'write outcome uncertain', 'http_5xx', 503, 40]
  ]
  for (const [callId, msg, cause, httpStatus, level] of expected) {
    const mine = of(callId)
    t.equal(mine.length, 1, `${callId}: one failure line`)
    t.match(mine[0], { msg, cause, level, reqId: 'req-fail-1', runId: 'r1', tenant: 'default' }, `${callId}: ${cause}`)
    t.equal(mine[0]?.httpStatus, httpStatus, `${callId}: its HTTP status`)
  }
  t.equal(of('c-away')[0]?.code, 'ECONNREFUSED', "the client's own code beside the cause")

  const m = await scrape(app)
  for (const [, , cause] of expected) t.equal(m.value('toolgate_executor_failures_total', { executor: 'http', cause }), 1, `counted as ${cause}`)
  t.notOk(logs.some((l) => l.includes(CANARY)), 'no log line holds the arguments or an answer body')
  t.notOk(m.text.includes(CANARY), '/metrics does not either')
})
