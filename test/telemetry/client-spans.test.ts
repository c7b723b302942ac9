/**
 * CLIENT spans of the requests a call makes (the authorizer, an MCP
 * server), log lines naming the active span, and an argument canary that
 * must reach no span.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import t from 'tap'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { buildApp } from '../../src/app.js'
import { createAuthorizer } from '../../src/auth/authorizer.js'
import { defaultConfig } from '../../src/config.js'
import { createLogger } from '../../src/logger.js'
import { traceLogFields } from '../../src/telemetry/tracing.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { startFaultServer } from '../mcp/fault-server.js'
import { idOf, parentOf, recordSpans, traceparentOf } from './spans.js'

const spans = recordSpans(t)
const CANARY = 'canary-argument-7f3a9c'

/** Every attribute and event of every span finished, as one text. */
const spanText = (): string => JSON.stringify(spans.all().map((s) => [s.name, s.attributes, s.events, s.status]))

/** A policy engine answering `result: true`, or a 500 for tool `broken`; keeps each request's headers. */
async function startOpa (t: { teardown: (fn: () => unknown) => void }): Promise<{ url: string, headers: IncomingHttpHeaders[] }> {
  const headers: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      headers.push(req.headers)
      const broken = Buffer.concat(chunks).toString('utf8').includes('"tool":"broken"')
      res.writeHead(broken ? 500 : 200, { 'content-type': 'application/json' }).end(JSON.stringify(broken ? {} : { result: true }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/data/toolgate/allow`, headers }
}

t.test('each authorizer request is a CLIENT span under the request, and carries it as traceparent', async (t) => {
  const opa = await startOpa(t)
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, {
    authorizer: createAuthorizer({ url: opa.url, timeoutMs: 2000 }),
    tools: [tool('look', ex.url, { readOnly: true }), tool('broken', ex.url, { readOnly: true })]
  })
  await post(app, '/v1/runs', { runId: 'r1' })
  spans.exporter.reset()
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: { k: CANARY } }, { id: 'b', name: 'broken', arguments: { k: CANARY } }] })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'rejected'])

  const server = spans.one('POST /v1/runs/:runId/batches')
  const asked = spans.clientsUnder(server)
  t.equal(asked.length, 2, 'one per call asked about')
  const port = Number(new URL(opa.url).port)
  for (const span of asked) {
    t.equal(span.name, 'POST')
    t.match(span.attributes, { 'http.request.method': 'POST', 'server.address': '127.0.0.1', 'server.port': port, 'url.full': opa.url })
  }
  const statuses = asked.map((s) => s.attributes['http.response.status_code']).sort()
  t.same(statuses, [200, 500])
  const failedOne = asked.find((s) => s.attributes['http.response.status_code'] === 500)!
  t.equal(failedOne.status.code, SpanStatusCode.ERROR)
  t.equal(failedOne.attributes['error.type'], '500')
  t.same(opa.headers.map((h) => h.traceparent).sort(), asked.map(traceparentOf).sort(), 'the authorizer got its span as parent')
  t.notOk(spanText().includes(CANARY), 'no argument reaches a span')
})

t.test('an MCP tools/call is a CLIENT span under the call, with its trace context in _meta', async (t) => {
  const faults = await startFaultServer()
  t.teardown(() => faults.close())
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'm', transport: 'streamableHttp', url: faults.url, trust: 'trusted', timeoutMs: 2000 }])
  await post(app, '/v1/runs', { runId: 'r1' })
  spans.exporter.reset()
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'm_echo', arguments: { text: CANARY } }, { id: 'b', name: 'm_rpcerror', arguments: {} }] })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'error'])

  const [echo] = spans.clientsUnder(spans.call('a'))
  t.equal(echo!.kind, SpanKind.CLIENT)
  t.equal(echo!.name, 'tools/call echo')
  t.same(echo!.attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'echo', 'network.transport': 'tcp', 'toolgate.mcp.server': 'm' })
  t.equal(echo!.status.code, SpanStatusCode.UNSET)
  t.equal(faults.calls.find((c) => c.tool === 'echo')!.meta?.traceparent, traceparentOf(echo!), 'the server got the CLIENT span in _meta')

  const [refused] = spans.clientsUnder(spans.call('b'))
  t.equal(refused!.attributes['rpc.response.status_code'], '-32602')
  t.equal(refused!.attributes['error.type'], '-32602')
  t.equal(refused!.status.code, SpanStatusCode.ERROR)
  t.notOk(spanText().includes(CANARY), 'no argument reaches a span')
})

t.test("with the trace mixin, a line written during a request names the request's span, and its access line the trace", async (t) => {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({ write (chunk, _enc, cb) { for (const l of String(chunk).split('\n')) if (l !== '') lines.push(JSON.parse(l)); cb() } })
  const ex = await startExecutor(t)
  ex.on('poke', (_c, _r, reply) => reply.code(503).send({ error: 'down' }))
  const app = await buildApp(defaultConfig({ logLevel: 'info' }), { logger: createLogger('info', stream, { mixin: traceLogFields }) })
  t.teardown(() => app.close())
  app.services.tools.putAll([tool('poke', ex.url)])
  await post(app, '/v1/runs', { runId: 'r1' })
  spans.exporter.reset()
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'p', name: 'poke', arguments: { k: CANARY } }] })
  t.equal(res.body.results[0].status, 'uncertain')

  const server = spans.one('POST /v1/runs/:runId/batches')
  const uncertain = lines.find((l) => l.msg === 'write outcome uncertain')
  t.ok(uncertain, 'the batch logged the uncertain write')
  t.equal(uncertain?.trace_id, server.spanContext().traceId)
  t.equal(uncertain?.span_id, idOf(server))
  const access = lines.find((l) => l.msg === 'batch completed')
  t.equal(access?.trace_id, server.spanContext().traceId, 'the access line carries the trace id')
  t.equal(parentOf(server), undefined)
  t.notOk(JSON.stringify(lines).includes(CANARY) || spanText().includes(CANARY), 'no argument reaches a line or a span')
})
