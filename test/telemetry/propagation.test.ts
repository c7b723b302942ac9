import t from 'tap'
import { activeTracer, tracingObserver } from '../../src/telemetry/tracing.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'

// No tracer provider is registered in this file's process: the default deployment.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/

t.test('without a tracer provider no span is made, yet executors get an unsampled traceparent per request', async (t) => {
  t.equal(activeTracer(), null)
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })
  await post(app, '/v1/runs', { runId: 'r1' })
  await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }, { id: 'b', name: 'poke', arguments: {} }] })
  await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'c', name: 'look', arguments: {} }] })
  t.equal(ex.calls.length, 3)
  const parsed = ex.calls.map((c) => TRACEPARENT.exec(c.traceparent ?? ''))
  t.ok(parsed.every((m) => m !== null), `well-formed: ${ex.calls.map((c) => c.traceparent).join(' ')}`)
  const [a, b, c] = parsed as RegExpExecArray[]
  t.equal(a![1], b![1], 'the calls of one batch share a trace id')
  t.not(a![2], b![2], 'each request has its own span id')
  t.not(c![1], a![1], 'another batch is another trace')
})

t.test("without a tracer provider a caller's traceparent is passed on unchanged", async (t) => {
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
  const observer = tracingObserver({ runId: 'r', batchId: 'b', tenant: 'x', turn: 1, calls: 1, mode: 'safeParallel', traceparent, tracestate: 'vendor=1' })
  const headers = observer.executorHeaders?.({ callId: 'c', tool: 'look', known: true, epoch: 0 })
  t.same(headers, { traceparent, tracestate: 'vendor=1' })
  t.equal(observer.callStarted, undefined, 'nothing else is observed')
})

t.test('an invalid incoming traceparent starts a fresh trace', async (t) => {
  const observer = tracingObserver({ runId: 'r', batchId: 'b', tenant: 'x', turn: 1, calls: 1, mode: 'safeParallel', traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' })
  const headers = observer.executorHeaders?.({ callId: 'c', tool: 'look', known: true, epoch: 0 })
  t.match(headers?.traceparent, TRACEPARENT)
  t.notMatch(headers?.traceparent, /^00-0{32}-/)
})
