import t from 'tap'
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { ATTR, REPEAT_EVENT, activeTracer, tracingObserver } from '../../src/telemetry/tracing.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'

// One provider for this file (tap runs each file in its own process).
const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
trace.setGlobalTracerProvider(provider)
t.teardown(() => provider.shutdown())
t.beforeEach(() => exporter.reset())

const spans = (): ReadableSpan[] => exporter.getFinishedSpans()
const named = (name: string): ReadableSpan[] => spans().filter((s) => s.name === name)
const one = (name: string): ReadableSpan => {
  const list = named(name)
  if (list.length !== 1) throw new Error(`expected one span ${name}, got ${list.length}: ${spans().map((s) => s.name).join(', ')}`)
  return list[0]!
}
const callSpan = (callId: string): ReadableSpan => {
  const s = spans().find((x) => x.attributes[ATTR.toolCallId] === callId && x.name.startsWith('execute_tool'))
  if (s === undefined) throw new Error(`no span for call ${callId}`)
  return s
}
const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId

t.test('a registered tracer provider is found through the api', async (t) => {
  t.not(activeTracer(), null)
})

t.test('a batch gives a span per batch, per epoch (child of the batch) and per call (child of its epoch)', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })
  await post(app, '/v1/runs', { runId: 'r1' })
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

  const batch = one('toolgate.batch')
  t.equal(batch.kind, SpanKind.INTERNAL)
  t.equal(parentOf(batch), undefined, 'the batch span is a root without an incoming traceparent')
  t.match(batch.attributes, { [ATTR.runId]: 'r1', [ATTR.batchId]: 'b1', [ATTR.turn]: 1, [ATTR.batchSize]: 4, [ATTR.batchOutcome]: 'completed' })

  const epochs = named('toolgate.epoch').sort((a, b) => Number(a.attributes[ATTR.epoch]) - Number(b.attributes[ATTR.epoch]))
  t.equal(epochs.length, 2)
  t.same(epochs.map((e) => [e.attributes[ATTR.epoch], e.attributes[ATTR.epochSize], parentOf(e)]), [[0, 2, batch.spanContext().spanId], [1, 1, batch.spanContext().spanId]])

  for (const [id, tool, epoch] of [['c1', 'look', 0], ['c2', 'look', 0], ['c3', 'poke', 1]] as const) {
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
      [ATTR.callStatus]: 'ok'
    })
    t.equal(s.status.code, SpanStatusCode.UNSET)
    t.equal(parentOf(s), epochs[epoch]!.spanContext().spanId, `${id} is a child of epoch ${epoch}`)
  }

  const rejected = callSpan('c4')
  t.equal(rejected.name, 'execute_tool', 'a name that resolved to no tool stays out of the span name')
  t.equal(rejected.attributes[ATTR.toolName], 'nope')
  t.equal(rejected.attributes[ATTR.callStatus], 'rejected')
  t.match(rejected.attributes[ATTR.errorType], /^(rejected|unknown_tool)$/)
  t.equal(rejected.status.code, SpanStatusCode.ERROR)
  t.equal(parentOf(rejected), batch.spanContext().spanId, 'a call that never ran hangs under the batch')

  const traceIds = new Set(spans().map((s) => s.spanContext().traceId))
  t.equal(traceIds.size, 1, 'one trace per batch')
})

t.test('each executor request carries the traceparent of its own call span', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  await post(app, '/v1/runs', { runId: 'r1' })
  await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }, { id: 'b', name: 'look', arguments: { x: 1 } }] })
  t.equal(ex.calls.length, 2)
  for (const call of ex.calls) {
    const s = callSpan(call.callId)
    t.equal(call.traceparent, `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`)
  }
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
  t.equal(callSpan('c4').attributes[ATTR.callStatus], 'terminated')
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
