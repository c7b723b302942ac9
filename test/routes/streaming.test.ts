/**
 * Server-sent events on POST /v1/runs/{runId}/batches (SPEC section 4,
 * "Streaming"), with a real HTTP client against a listening app.
 */
import t from 'tap'
import type { FastifyReply } from 'fastify'
import { buildTestApp, post, startExecutor, tool, type ExecutorCall } from '../helper.js'
import { wantsEventStream } from '../../routes/batches.js'
import type { BatchResponse } from '../../src/model/result.js'
import { type SseEvent, callGates, collect, eventOf, responseOf, ssePost, waitFor } from '../schedule/harness.js'

// One app and one executor for the file; each test has its own run.
const ex = await startExecutor(t)
const { gates, hold, waitFor: held } = callGates()
const behaviour = async (call: ExecutorCall, _req: unknown, _reply: FastifyReply): Promise<unknown> => {
  await held(call)
  return { content: { did: call.callId } }
}
ex.on('look', behaviour)
ex.on('poke', behaviour)
const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })
/** Requests marked `x-hold` wait before their handler runs until the test opens the gate of that name. */
// A callback hook, so other requests pass straight through with their timing unchanged.
app.addHook('preHandler', (req, _reply, done) => {
  const held = gates.get(String(req.headers['x-hold']))
  if (held === undefined) done()
  else void held.promise.then(() => done())
})
const base = await app.listen({ port: 0, host: '127.0.0.1' })
const url = (runId: string): string => `${base}/v1/runs/${runId}/batches`
const seen = (runId: string): string[] => ex.calls.filter((c) => c.runId === runId).map((c) => c.callId)
const call = (id: string, name: string): Record<string, unknown> => ({ id, name, arguments: { k: id } })

/** A run's stored answer to a batch, through the JSON path (idempotent resubmission), once the batch is done. */
async function storedAnswer (runId: string, body: Record<string, unknown>): Promise<{ status: number, body: BatchResponse }> {
  let res = await post(app, `/v1/runs/${runId}/batches`, body)
  for (let tries = 0; res.status === 409 && res.body.code === 'run_busy' && tries < 1000; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 5))
    res = await post(app, `/v1/runs/${runId}/batches`, body)
  }
  return res
}

/** Requests marked `x-test-id` that reached the server, and those whose response closed there (finished or not). */
const receivedOnServer = new Set<string>()
const closedOnServer = new Set<string>()
app.server.on('request', (req, res) => {
  const id = req.headers['x-test-id']
  if (typeof id !== 'string') return
  receivedOnServer.add(id)
  res.on('close', () => closedOnServer.add(id))
})

t.test('a streaming batch sends each event as `event:` type and `data:` JSON and ends with batch.completed holding the whole response', async (t) => {
  await post(app, '/v1/runs', { runId: 'sse', events: 'lifecycle' })
  const body = { batchId: 'b1', calls: [call('a', 'look'), call('b', 'look'), call('c', 'poke')] }
  const res = await ssePost(url('sse'), body)
  t.equal(res.status, 200)
  t.match(res.headers['content-type'], /^text\/event-stream/)
  t.equal(res.headers['cache-control'], 'no-cache, no-transform')
  const events = await collect(res.events)
  const last = events.at(-1)!
  t.equal(last.type, 'batch.completed', 'the last event is batch.completed')
  t.equal(events.filter((e) => e.type === 'batch.completed').length, 1)
  for (const e of events.slice(0, -1)) t.equal(eventOf(e).type, e.type, `event ${e.type} carries its own JSON`)

  const response = responseOf(events)
  t.strictSame(response.results.map((r) => [r.callId, r.status]), [['a', 'ok'], ['b', 'ok'], ['c', 'ok']])
  t.strictSame(response.results[2]?.content, JSON.stringify({ did: 'c' }))
  t.strictSame(events.slice(0, -1).map(eventOf), response.events.slice(0, -1), 'the streamed events are the response events, in order')
  t.equal(response.events.at(-1)?.type, 'batch.completed')

  // The JSON path answers the same response for the same batch (stored, not run again).
  const json = await post(app, '/v1/runs/sse/batches', body)
  t.equal(json.status, 200)
  t.strictSame(response, json.body, 'same shape and content as the JSON answer')
  t.strictSame(seen('sse'), ['a', 'b', 'c'], 'nothing dispatched twice')
})

t.test('under the stock audience only batch.started, run.terminated and batch.completed are streamed', async (t) => {
  // maxToolCalls 1 terminates the run on the second call, so there is a run.terminated to see.
  for (const [events, expected] of [
    ['stock', ['batch.started', 'run.terminated', 'batch.completed']],
    ['lifecycle', ['batch.started', 'run.terminated', 'epoch.started', 'call.started', 'call.completed', 'epoch.settled', 'batch.completed']]
  ] as const) {
    const runId = `audience-${events}`
    await post(app, '/v1/runs', { runId, events, limits: { maxToolCalls: 1 } })
    const res = await ssePost(url(runId), { calls: [call('a', 'look'), call('b', 'look')] })
    const streamed: SseEvent[] = await collect(res.events)
    t.strictSame(streamed.map((e) => e.type), expected, events)
    const response = responseOf(streamed)
    t.strictSame(response.events.map((e) => e.type), expected, `${events}: the response's events agree`)
    t.strictSame(response.results.map((r) => r.status), ['ok', 'terminated'])
    t.equal(response.continue, false)
  }
})

t.test('a problem found before the stream opens is an ordinary problem response', async (t) => {
  const unknown = await ssePost(url('nope'), { calls: [call('a', 'look')] })
  t.equal(unknown.status, 404)
  t.match(unknown.headers['content-type'], /^application\/problem\+json/)
  t.match(JSON.parse(await unknown.text()), { status: 404, code: 'run_not_found' })

  await post(app, '/v1/runs', { runId: 'busy' })
  const g = hold('busy', 'a')
  const first = post(app, '/v1/runs/busy/batches', { calls: [call('a', 'look')] })
  await waitFor(() => seen('busy').length === 1, 'the first batch to be in flight')
  const busy = await ssePost(url('busy'), { calls: [call('b', 'look')] })
  t.equal(busy.status, 409)
  t.match(busy.headers['content-type'], /^application\/problem\+json/)
  t.match(JSON.parse(await busy.text()), { status: 409, code: 'run_busy' })
  g.open()
  t.equal((await first).status, 200)

  await post(app, '/v1/runs/busy/cancel', {})
  const inactive = await ssePost(url('busy'), { calls: [call('c', 'look')] })
  t.equal(inactive.status, 409)
  t.match(JSON.parse(await inactive.text()), { code: 'run_not_active', terminationReason: 'cancelled' })
  t.strictSame(seen('busy'), ['a'])
})

t.test('a client that goes away mid-batch cancels the calls not yet started; the running ones settle', async (t) => {
  await post(app, '/v1/runs', { runId: 'gone', toolExecution: 'sequential', events: 'lifecycle' })
  const g = hold('gone', 'a')
  const body = { batchId: 'g1', calls: [call('a', 'poke'), call('b', 'look'), call('c', 'poke')] }
  const res = await ssePost(url('gone'), body, { 'x-test-id': 'gone' })
  t.equal(res.status, 200)
  const first = await res.events.next()
  t.equal(first.value?.type, 'batch.started')
  await waitFor(() => seen('gone').length === 1, 'the first call to start')
  res.abort()
  await waitFor(() => closedOnServer.has('gone'), 'the server to see the disconnect')
  t.notOk(seen('gone').includes('b'))
  g.open()
  const stored = await storedAnswer('gone', body)
  t.equal(stored.status, 200)
  t.strictSame(stored.body.results.map((r) => [r.callId, r.status, r.details.reason]),
    [['a', 'ok', undefined], ['b', 'cancelled', 'client_gone'], ['c', 'cancelled', 'client_gone']])
  t.strictSame(seen('gone'), ['a'], 'nothing started after the disconnect')
  const run = await app.inject({ method: 'GET', url: '/v1/runs/gone' })
  t.equal(run.json().state, 'active', 'a client going away cancels the batch, not the run')
})

t.test('a client that goes away before its batch starts gets every call cancelled, none dispatched', async (t) => {
  await post(app, '/v1/runs', { runId: 'early', events: 'lifecycle' })
  const handler = hold('hook', 'early')
  const body = { batchId: 'e1', calls: [call('a', 'look'), call('b', 'poke')] }
  const leave = new AbortController()
  const pending = ssePost(url('early'), body, { 'x-test-id': 'early', 'x-hold': 'hook/early' }, leave.signal).then(() => 'answered', () => 'left')
  // Leave while the request waits before its handler, so the close comes before the route listens for it.
  await waitFor(() => receivedOnServer.has('early'), 'the server to receive the request')
  leave.abort()
  await waitFor(() => closedOnServer.has('early'), 'the server to see the disconnect')
  handler.open()
  t.equal(await pending, 'left')
  const stored = await storedAnswer('early', body)
  t.equal(stored.status, 200)
  t.strictSame(stored.body.results.map((r) => [r.callId, r.status, r.details.reason]), [['a', 'cancelled', 'client_gone'], ['b', 'cancelled', 'client_gone']])
  t.strictSame(seen('early'), [], 'nothing reached the executor')
})

t.test('the stream is chosen by the Accept header: text/event-stream with a quality above zero, not below JSON', async (t) => {
  const table: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ['application/json', false],
    ['*/*', false],
    ['text/event-stream', true],
    ['TEXT/Event-Stream', true],
    [' text/event-stream ; q=0.8', true],
    ['text/event-stream;q=0', false],
    ['application/json, text/event-stream', true],
    ['application/json;q=1, text/event-stream;q=0.5', false],
    ['text/event-stream;q=oops', false],
    ['text/event-streams', false]
  ]
  for (const [accept, want] of table) t.equal(wantsEventStream(accept), want, String(accept))

  await post(app, '/v1/runs', { runId: 'q0' })
  const res = await app.inject({ method: 'POST', url: '/v1/runs/q0/batches', headers: { accept: 'text/event-stream;q=0' }, payload: { calls: [call('a', 'look')] } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/, 'a client that refuses the stream gets JSON')
  t.equal(res.json().results[0].status, 'ok')
})
