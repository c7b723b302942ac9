import t from 'tap'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { OtelConfigError, parseList, startOtel, tracesUrl } from '../../src/telemetry/otel.js'
import { activeTracer } from '../../src/telemetry/tracing.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'

type Tap = { teardown: (fn: () => unknown) => void }

interface Received { method: string, url: string, headers: IncomingHttpHeaders, body: string }

/** A stand-in OTLP/HTTP collector on 127.0.0.1:0 that keeps every request. */
async function startCollector (t: Tap): Promise<{ url: string, received: Received[] }> {
  const received: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}

t.test('the traces URL is the signal endpoint as given, or the general one with /v1/traces', async (t) => {
  t.equal(tracesUrl({}), null)
  t.equal(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), 'http://collector:4318/v1/traces')
  t.equal(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }), 'http://collector:4318/v1/traces')
  t.equal(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/custom' }), 'https://b/custom')
  t.throws(() => tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }), OtelConfigError)
  t.throws(() => tracesUrl({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }), /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT/)
})

t.test('OTEL list variables are key=value pairs with percent-encoded values', async (t) => {
  t.same(parseList('a=1, b=x%20y,broken,=v'), { a: '1', b: 'x y' })
  t.same(parseList(undefined), {})
})

t.test('without an endpoint, or with the SDK disabled, nothing is started', async (t) => {
  for (const env of [{}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_SDK_DISABLED: 'true' }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_TRACES_EXPORTER: 'none' }]) {
    const stop = await startOtel(env)
    t.equal(activeTracer(), null, JSON.stringify(env))
    await stop()
  }
})

t.test('with OTEL_EXPORTER_OTLP_ENDPOINT set, spans are exported over OTLP/HTTP', async (t) => {
  const collector = await startCollector(t)
  const stop = await startOtel({
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=abc',
    OTEL_SERVICE_NAME: 'toolgate-test',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=ci'
  })
  t.teardown(stop)
  t.not(activeTracer(), null)
  await t.rejects(startOtel({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }), OtelConfigError, 'a second provider is refused')

  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  await post(app, '/v1/runs', { runId: 'r1' })
  await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }] })
  t.equal(collector.received.length, 0, 'spans are batched, not sent one by one')
  await stop()
  t.equal(activeTracer(), null, 'shutdown unregisters the provider')

  t.ok(collector.received.length >= 1)
  const req = collector.received[0]!
  t.equal(req.method, 'POST')
  t.equal(req.url, '/v1/traces')
  t.match(req.headers['content-type'], /application\/json/)
  t.equal(req.headers['x-collector-token'], 'abc')
  const body = JSON.parse(req.body) as { resourceSpans: Array<{ resource: { attributes: Array<{ key: string, value: { stringValue?: string } }> }, scopeSpans: Array<{ scope: { name: string }, spans: Array<{ name: string, traceId: string, spanId: string }> }> }> }
  const resource = Object.fromEntries(body.resourceSpans[0]!.resource.attributes.map((a) => [a.key, a.value.stringValue]))
  t.equal(resource['service.name'], 'toolgate-test')
  t.equal(resource['deployment.environment'], 'ci')
  const exported = body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((x) => ({ scope: s.scope.name, ...x }))))
  t.same(exported.map((s) => s.name).sort(), ['execute_tool look', 'toolgate.batch', 'toolgate.epoch'])
  t.ok(exported.every((s) => s.scope === 'toolgate'))
  const call = exported.find((s) => s.name === 'execute_tool look')!
  t.equal(ex.calls[0]!.traceparent, `00-${call.traceId}-${call.spanId}-01`, 'the executor got the exported span as its parent')
})
