import t from 'tap'
import { SpanKind } from '@opentelemetry/api'
import { activeTracer } from '../../src/telemetry/tracing.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { recordSpans } from './spans.js'

// tap runs each file in its own process: no tracer provider is registered until this file registers one.

t.test('an app built without a tracer provider adds no SERVER span hooks: a provider registered later sees batch spans but no request spans', async (t) => {
  t.equal(activeTracer(), null, 'no provider yet')
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  const spans = recordSpans(t)
  t.not(activeTracer(), null, 'a provider now')

  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await post(app, '/v1/runs/r1/batches', { batchId: 'b1', calls: [{ id: 'c1', name: 'look', arguments: { x: 1 } }] })
  t.equal(res.status, 200)
  t.equal(spans.all().filter((s) => s.kind === SpanKind.SERVER).length, 0, 'no SERVER span: tracing of requests is decided when the app is built')
  t.equal(spans.named('toolgate.batch').length, 1, 'the batch span, made per batch, follows the provider')
})
