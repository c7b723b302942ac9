import t from 'tap'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFileSync } from 'node:fs'
import { DEFAULT_EXPORT_TIMEOUT_MS, OtelConfigError, exportSettings, otelEnabled, parseList, startOtel, tracesUrl } from '../../src/telemetry/otel.js'
import { activeTracer } from '../../src/telemetry/tracing.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { type ExportedSpan, decodeJson, decodeProtobuf } from './otlp.js'

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

type Tap = { teardown: (fn: () => unknown) => void }

interface Received { method: string, url: string, headers: IncomingHttpHeaders, body: Buffer }

/** A stand-in OTLP/HTTP receiver on 127.0.0.1:0 that keeps every request. */
async function startCollector (t: Tap): Promise<{ url: string, received: Received[] }> {
  const received: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) })
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

t.test('the protocol, headers and timeout come from the standard variables, the traces ones first', async (t) => {
  const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }
  t.equal(exportSettings({}), null)
  t.equal(otelEnabled(base), true)
  t.equal(otelEnabled({ ...base, OTEL_SDK_DISABLED: 'true' }), false)
  t.same(exportSettings(base), { url: 'http://collector:4318/v1/traces', protocol: 'http/protobuf', headers: {}, timeoutMillis: DEFAULT_EXPORT_TIMEOUT_MS }, 'http/protobuf is the default, as the spec says')
  t.equal(exportSettings({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })?.protocol, 'http/json')
  t.equal(exportSettings({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })?.protocol, 'http/protobuf')
  t.same(exportSettings({ ...base, OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=2', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=3' })?.headers, { a: '1', b: '3' })
  t.equal(exportSettings({ ...base, OTEL_EXPORTER_OTLP_TIMEOUT: '2500' })?.timeoutMillis, 2500)
  t.equal(exportSettings({ ...base, OTEL_EXPORTER_OTLP_TIMEOUT: '2500', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '700' })?.timeoutMillis, 700)
  t.throws(() => exportSettings({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), /OTEL_EXPORTER_OTLP_PROTOCOL.*grpc is not supported/)
  for (const bad of ['0', '-5', '1.5', 'soon']) t.throws(() => exportSettings({ ...base, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: bad }), /OTEL_EXPORTER_OTLP_TRACES_TIMEOUT/, bad)
  const secret = 'x-token=s3cret-header-value'
  try {
    exportSettings({ ...base, OTEL_EXPORTER_OTLP_HEADERS: secret, OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' })
    t.fail('a bad protocol is refused')
  } catch (err) {
    t.notMatch((err as Error).message, /s3cret/, 'a header value is never part of an error message')
  }
})

const CANARY = 'canary-argument-c0ffee'
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'
// OTLP's span kinds: the api's plus one.
const KIND = { internal: 1, server: 2, client: 3 } as const

for (const protocol of ['http/protobuf', 'http/json'] as const) {
  t.test(`with OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}, spans reach an OTLP receiver in that encoding`, async (t) => {
    const collector = await startCollector(t)
    const stop = await startOtel({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
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
    await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: { k: CANARY } }, { id: 'b', name: 'nope', arguments: { k: CANARY } }] },
      { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` })
    t.equal(collector.received.length, 0, 'spans are batched, not sent one by one')
    await stop()
    t.equal(activeTracer(), null, 'shutdown unregisters the provider')

    t.ok(collector.received.length >= 1)
    for (const req of collector.received) {
      t.equal(req.method, 'POST')
      t.equal(req.url, '/v1/traces')
      t.equal(req.headers['content-type'], protocol === 'http/protobuf' ? 'application/x-protobuf' : 'application/json')
      t.equal(req.headers['x-collector-token'], 'abc')
      t.notOk(req.body.includes(CANARY), 'no argument anywhere in what is exported')
    }
    const exports = collector.received.flatMap((r) => protocol === 'http/protobuf' ? decodeProtobuf(r.body) : decodeJson(r.body))
    const resource = exports[0]!.resource
    t.equal(resource['service.name'], 'toolgate-test')
    t.equal(resource['service.version'], version)
    t.match(resource['service.instance.id'], /^[0-9a-f-]{36}$/)
    t.equal(resource['deployment.environment'], 'ci')

    const exported = exports.flatMap((e) => e.spans)
    t.ok(exported.every((s) => s.scope === 'toolgate'))
    const find = (name: string): ExportedSpan => exported.find((s) => s.name === name) ?? t.fail(`no span ${name}`) as never
    const server = find('POST /v1/runs/:runId/batches')
    const batch = find('toolgate.batch')
    const epoch = find('toolgate.epoch')
    const call = find('execute_tool look')
    const client = exported.find((s) => s.kind === KIND.client && s.parentSpanId === call.spanId)!
    t.same([server.kind, batch.kind, epoch.kind, call.kind, client.kind], [KIND.server, KIND.internal, KIND.internal, KIND.internal, KIND.client])
    t.equal(server.traceId, CALLER_TRACE, "the caller's trace is continued")
    t.equal(server.parentSpanId, CALLER_SPAN)
    t.same([batch.parentSpanId, epoch.parentSpanId, call.parentSpanId], [server.spanId, batch.spanId, epoch.spanId])
    t.match(server.attributes, { 'http.request.method': 'POST', 'http.route': '/v1/runs/:runId/batches', 'url.path': '/v1/runs/r1/batches', 'http.response.status_code': 200 })
    t.match(call.attributes, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'look', 'gen_ai.tool.description': 'The look tool.', 'gen_ai.tool.call.id': 'a' })
    t.match(client.attributes, { 'http.request.method': 'POST', 'server.address': '127.0.0.1', 'http.response.status_code': 200 })
    t.same(batch.events.map((e) => [e.name, e.attributes['gen_ai.tool.call.id'], e.attributes['toolgate.call.status']]), [['toolgate.call.not_run', 'b', 'rejected']])
    t.notOk(exported.some((s) => s.attributes['gen_ai.tool.call.id'] === 'b'), 'the rejected call has no span')
    t.equal(ex.calls[0]!.traceparent, `00-${client.traceId}-${client.spanId}-01`, 'the executor got the exported CLIENT span as its parent')
  })
}
