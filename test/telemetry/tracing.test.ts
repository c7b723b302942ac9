import t from 'tap'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { ATTR, NOT_RUN_EVENT, REPEAT_EVENT, activeTracer, tracingObserver } from '../../src/telemetry/tracing.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { idOf, parentOf, recordSpans } from './spans.js'

const recorded = recordSpans(t)
const { exporter } = recorded
const spans = recorded.all
const named = recorded.named
const one = recorded.one
const callSpan = recorded.call
const clientUnder = recorded.clientsUnder

t.test('a registered tracer provider is found through the api', async (t) => {
  t.not(activeTracer(), null)
})

t.test('a batch request: a SERVER span, the batch under it, an epoch per epoch, a call span per call run and a CLIENT span per executor request', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true, description: 'Looks at a tile.' }), tool('poke', ex.url)] })
  await post(app, '/v1/runs', { runId: 'r1' })
  exporter.reset()
  const res = await post(app, '/v1/runs/r1/batches', {
    batchId: 'b1',
    calls: [
      { id: 'c1', name: 'look', arguments: { x: 1 } },
      { id: 'c2', name: 'look', arguments: { x: 2 } },
      { id: 'c3', name: 'poke', arguments: { x: 3 } },
      { id: 'c4', name: 'nope', arguments: {} }
    ]
  })
  t.equal(res.status, 200)

  const server = one('POST /v1/runs/:runId/batches')
  t.equal(server.kind, SpanKind.SERVER)
  t.equal(parentOf(server), undefined, 'the request span is a root without an incoming traceparent')
  t.match(server.attributes, {
    'http.request.method': 'POST', 'http.route': '/v1/runs/:runId/batches', 'url.path': '/v1/runs/r1/batches', 'url.scheme': 'http', 'http.response.status_code': 200
  })
  t.equal(server.status.code, SpanStatusCode.UNSET)

  const batch = one('toolgate.batch')
  t.equal(batch.kind, SpanKind.INTERNAL)
  t.equal(parentOf(batch), idOf(server), 'the batch is a child of its request')
  t.match(batch.attributes, { [ATTR.runId]: 'r1', [ATTR.batchId]: 'b1', [ATTR.turn]: 1, [ATTR.batchSize]: 4, [ATTR.batchOutcome]: 'completed' })

  const epochs = named('toolgate.epoch').sort((a, b) => Number(a.attributes[ATTR.epoch]) - Number(b.attributes[ATTR.epoch]))
  t.equal(epochs.length, 2)
  t.same(epochs.map((e) => [e.attributes[ATTR.epoch], e.attributes[ATTR.epochSize], parentOf(e)]), [[0, 2, idOf(batch)], [1, 1, idOf(batch)]])

  const port = Number(new URL(ex.url).port)
  for (const [id, tool, epoch, description] of [['c1', 'look', 0, 'Looks at a tile.'], ['c2', 'look', 0, 'Looks at a tile.'], ['c3', 'poke', 1, 'The poke tool.']] as const) {
    const s = callSpan(id)
    t.equal(s.name, `execute_tool ${tool}`)
    t.equal(s.kind, SpanKind.INTERNAL, 'execute_tool spans are INTERNAL')
    t.same(s.attributes, {
      [ATTR.operationName]: 'execute_tool',
      [ATTR.toolName]: tool,
      [ATTR.toolCallId]: id,
      [ATTR.toolType]: 'function',
      [ATTR.conversationId]: 'r1',
      [ATTR.runId]: 'r1',
      [ATTR.batchId]: 'b1',
      [ATTR.epoch]: epoch,
      [ATTR.toolDescription]: description,
      [ATTR.callStatus]: 'ok'
    })
    t.equal(s.status.code, SpanStatusCode.UNSET)
    t.equal(parentOf(s), idOf(epochs[epoch]!), `${id} is a child of epoch ${epoch}`)

    const clients = clientUnder(s)
    t.equal(clients.length, 1, `one executor request for ${id}`)
    t.equal(clients[0]!.name, 'POST')
    t.same(clients[0]!.attributes, {
      'http.request.method': 'POST', 'server.address': '127.0.0.1', 'server.port': port, 'url.full': `http://127.0.0.1:${port}/tools/${tool}`, 'http.response.status_code': 200
    })
    const request = ex.calls.find((c) => c.callId === id)!
    t.equal(request.traceparent, `00-${clients[0]!.spanContext().traceId}-${idOf(clients[0]!)}-01`, 'the executor request carries its CLIENT span')
  }

  t.notOk(spans().some((s) => s.attributes[ATTR.toolCallId] === 'c4'), 'a call that never ran has no span')
  t.same(batch.events.filter((e) => e.name === NOT_RUN_EVENT).map((e) => e.attributes), [
    { [ATTR.toolName]: 'nope', [ATTR.toolCallId]: 'c4', [ATTR.callStatus]: 'rejected', [ATTR.errorType]: 'unknown_tool' }
  ], 'it is an event on the batch span')
  t.notOk(spans().some((s) => s.status.code === SpanStatusCode.ERROR), 'so it counts as no failed tool')

  const traceIds = new Set(spans().map((s) => s.spanContext().traceId))
  t.equal(traceIds.size, 1, 'one trace per request')
})

t.test("a request's traceparent is continued by its SERVER span; a 4xx is no server error, probes are not traced", async (t) => {
  const { app } = await buildTestApp(t)
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const parentId = '00f067aa0ba902b7'
  const res = await post(app, '/v1/runs', { runId: 'r1', nonsense: true }, { traceparent: `00-${traceId}-${parentId}-01` })
  t.equal(res.status, 400)
  const server = one('POST /v1/runs')
  t.equal(server.spanContext().traceId, traceId)
  t.equal(parentOf(server), parentId)
  t.equal(server.attributes['http.response.status_code'], 400)
  t.equal(server.status.code, SpanStatusCode.UNSET)

  exporter.reset()
  await app.inject({ method: 'GET', url: '/healthz' })
  await app.inject({ method: 'GET', url: '/no/such/route' })
  t.same(spans().map((s) => [s.name, s.attributes['http.response.status_code'], s.attributes['http.route']]), [['GET', 404, undefined]], 'an unrouted request is traced by method alone; /healthz is not')
})

t.test('a request refused by the auth hook is traced, with the tenant unknown', async (t) => {
  const { app } = await buildTestApp(t, { keysDoc: { keys: [{ key: 'orchestrator-key-0123456789', tenant: 'acme', roles: ['orchestrator'] }] } })
  const res = await app.inject({ method: 'GET', url: '/v1/tools' })
  t.equal(res.statusCode, 401)
  const server = one('GET /v1/tools')
  t.equal(server.attributes['http.response.status_code'], 401)
  t.equal(server.attributes['toolgate.tenant'], undefined)
})

t.test("a failed call's span has an error status and error.type; an uncertain write says so", async (t) => {
  const ex = await startExecutor(t)
  ex.on('poke', (_c, _r, reply) => reply.code(503).send({ error: 'down' }))
  ex.on('look', (_c, _r, reply) => reply.code(404).send({ content: 'no such tile' }))
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'l', name: 'look', arguments: {} }, { id: 'p', name: 'poke', arguments: {} }] })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['error', 'uncertain'])

  const look = callSpan('l')
  t.equal(look.status.code, SpanStatusCode.ERROR)
  t.equal(look.attributes[ATTR.callStatus], 'error')
  t.type(look.attributes[ATTR.errorType], 'string')
  const poke = callSpan('p')
  t.equal(poke.status.code, SpanStatusCode.ERROR)
  t.equal(poke.attributes[ATTR.callStatus], 'uncertain')
  t.match(poke.attributes[ATTR.errorType], /^(uncertain|executor_5xx)$/)
  t.equal(poke.attributes[ATTR.callUncertain], true)

  const [lookClient] = clientUnder(look)
  t.equal(lookClient!.attributes['http.response.status_code'], 404)
  t.equal(lookClient!.attributes['error.type'], '404', 'a CLIENT span is an error from 400 up')
  t.equal(lookClient!.status.code, SpanStatusCode.ERROR)
  const [pokeClient] = clientUnder(poke)
  t.equal(pokeClient!.attributes['http.response.status_code'], 503)
  t.equal(pokeClient!.status.code, SpanStatusCode.ERROR)
})

t.test('a repeat detection is a kernel.toolrepeatdetected event on the batch span, with kind, tool, action and count only', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  await post(app, '/v1/runs', { runId: 'r1', limits: { exactToolRepeatAdvisoryThreshold: 2, exactToolRepeatTerminationThreshold: 4 } })
  const same = { name: 'look', arguments: { k: 'same' } }
  const res = await post(app, '/v1/runs/r1/batches', { calls: [1, 2, 3, 4, 5].map((i) => ({ id: `c${i}`, ...same })) })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok', 'terminated', 'terminated'])

  const batch = one('toolgate.batch')
  const events = batch.events.filter((e) => e.name === REPEAT_EVENT)
  t.same(events.map((e) => e.attributes), [
    { 'toolgate.repeat.kind': 'exact', [ATTR.toolName]: 'look', [ATTR.toolCallId]: 'c2', [ATTR.repeatAction]: 'advisory', [ATTR.repeatCount]: 2 },
    { 'toolgate.repeat.kind': 'exact', [ATTR.toolName]: 'look', [ATTR.toolCallId]: 'c4', [ATTR.repeatAction]: 'terminated', [ATTR.repeatCount]: 4 }
  ])
  t.equal(batch.attributes[ATTR.terminationReason], 'exact_repeat')
  t.equal(batch.attributes[ATTR.batchOutcome], 'terminated')
  t.same(batch.events.filter((e) => e.name === NOT_RUN_EVENT).map((e) => [e.attributes?.[ATTR.toolCallId], e.attributes?.[ATTR.callStatus]]), [['c4', 'terminated'], ['c5', 'terminated']],
    'the terminated calls never ran: events, not spans')
  t.notMatch(JSON.stringify(spans().map((s) => [s.attributes, s.events])), /same/, 'no argument value reaches a span')
})

t.test('a batch whose request carried a traceparent continues that trace', async (t) => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const parentId = '00f067aa0ba902b7'
  const observer = tracingObserver({ runId: 'r', batchId: 'b', tenant: 'x', turn: 1, calls: 1, mode: 'safeParallel', traceparent: `00-${traceId}-${parentId}-01` })
  observer.epochStarted?.(0, 1)
  const call = { callId: 'c', tool: 'look', known: true, epoch: 0 }
  observer.callStarted?.(call)
  const headers = observer.executorHeaders?.(call)
  observer.callSettled?.({ ...call, status: 'ok', durationMs: 1, uncertain: false, readOnly: true })
  observer.epochSettled?.(0, 1, 1)
  observer.batchCompleted?.('completed', 2)

  const batch = one('toolgate.batch')
  t.equal(batch.spanContext().traceId, traceId)
  t.equal(parentOf(batch), parentId)
  t.match(headers?.traceparent, new RegExp(`^00-${traceId}-${callSpan('c').spanContext().spanId}-01$`))
})

t.test('a projection failure closes the batch span with an error and marks the call', async (t) => {
  const ex = await startExecutor(t)
  ex.on('build', () => ({ status: 'committed', result: { label: 'Wall' } }))
  const { app } = await buildTestApp(t, { tools: [tool('build', ex.url, { action: { projection: '[1, 2]', maxModelReceiptChars: 4096 } })] })
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'build', arguments: { x: 1 } }] })
  t.equal(res.body.results[0].status, 'projection_failed')
  const batch = one('toolgate.batch')
  t.equal(batch.attributes[ATTR.batchOutcome], 'closed')
  t.equal(batch.status.code, SpanStatusCode.ERROR)
  t.equal(callSpan('a').attributes[ATTR.projectionProblem], 'not_an_object')
  t.equal(callSpan('a').attributes[ATTR.callStatus], 'projection_failed')
})
