import t from 'tap'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ATTR } from '../../src/telemetry/tracing.js'
import { MCP_ATTR } from '../../src/telemetry/mcp-spans.js'
import { idOf, parentOf, recordSpans } from '../telemetry/spans.js'
import { buildTestApp, get, sleep, startExecutor, tool } from '../helper.js'

/**
 * A SERVER span per MCP request (SPEC sections 8 and 16; OpenTelemetry's
 * MCP conventions): a child of the HTTP request that carried it, the parent
 * of the batch a `tools/call` runs; never arguments.
 */
const recorded = recordSpans(t)
const CANARY = 'canary-mcp-span-5e1b'

const executor = await startExecutor(t)
const { app } = await buildTestApp(t, {
  config: { host: '127.0.0.1' },
  tools: [tool('build', executor.url, { conflictKey: 'tile:{/x}' }), tool('ship', executor.url, { requiresApproval: true })]
})
executor.on('build', (call) => call.arguments.k === 'fail' ? { isError: true, content: 'no' } : { content: { ok: true } })
const base = await app.listen({ port: 0, host: '127.0.0.1' })

async function connect (): Promise<{ client: Client, transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`))
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  return { client, transport }
}

/** The MCP SERVER spans of a method, in start order. */
function mcp (method: string): ReadableSpan[] {
  return recorded.all().filter((s) => s.kind === SpanKind.SERVER && s.attributes[MCP_ATTR.method] === method)
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
}

function byId (id: string | undefined): ReadableSpan | undefined {
  return recorded.all().find((s) => idOf(s) === id)
}

t.test('initialize, tools/list and tools/call each get a SERVER span; the call\'s batch runs under its span', async (t) => {
  const { client, transport } = await connect()
  await client.listTools()
  const result = await client.callTool({ name: 'build', arguments: { x: 1, k: CANARY } })
  t.equal(result.isError, false)
  const sessionId = transport.sessionId!

  const init = mcp('initialize')[0]!
  t.equal(init.name, 'initialize')
  t.match(init.attributes, { [MCP_ATTR.method]: 'initialize', [MCP_ATTR.sessionId]: sessionId, [MCP_ATTR.requestId]: '0', [MCP_ATTR.protocolVersion]: /^\d{4}-\d{2}-\d{2}$/ })
  t.equal(byId(parentOf(init))?.name, 'POST /mcp', 'a child of the HTTP request that carried it')

  const list = mcp('tools/list')[0]!
  t.equal(list.name, 'tools/list')
  t.match(list.attributes, { [MCP_ATTR.sessionId]: sessionId, [MCP_ATTR.requestId]: '1' })
  t.equal(list.status.code, SpanStatusCode.UNSET)

  const call = mcp('tools/call')[0]!
  t.equal(call.name, 'tools/call build')
  t.equal(call.kind, SpanKind.SERVER)
  t.match(call.attributes, { [MCP_ATTR.method]: 'tools/call', [MCP_ATTR.sessionId]: sessionId, [MCP_ATTR.requestId]: '2', [ATTR.toolName]: 'build', [ATTR.operationName]: 'execute_tool' })
  t.equal(byId(parentOf(call))?.name, 'POST /mcp')
  const batch = recorded.all().find((s) => s.name === 'toolgate.batch' && parentOf(s) === idOf(call))
  t.ok(batch, 'the batch span of the call is a child of its MCP span')
  const executed = recorded.all().find((s) => s.name === 'execute_tool build')
  t.ok(executed, 'and the call runs under that batch')
  t.equal(byId(parentOf(byId(parentOf(executed!))!))?.name, 'toolgate.batch', 'execute_tool → epoch → batch')

  t.notOk(JSON.stringify(recorded.all().map((s) => [s.name, s.attributes, s.events])).includes(CANARY), 'no argument reaches a span')
})

t.test('a tool error and a JSON-RPC error mark their spans', async (t) => {
  const { client } = await connect()
  const failed = await client.callTool({ name: 'build', arguments: { x: 1, k: 'fail' } })
  t.equal(failed.isError, true)
  await t.rejects(client.callTool({ name: 'nope', arguments: {} }), { code: -32602 })
  const [toolError, unknown] = mcp('tools/call').slice(-2)
  t.match(toolError!.attributes, { [ATTR.errorType]: 'tool_error' })
  t.equal(toolError!.status.code, SpanStatusCode.ERROR)
  t.equal(unknown!.name, 'tools/call nope')
  t.match(unknown!.attributes, { [ATTR.errorType]: '-32602' })
  t.equal(unknown!.status.code, SpanStatusCode.ERROR)
})

t.test('a call the client cancels ends its span as cancelled', async (t) => {
  const { client } = await connect()
  const abort = new AbortController()
  const call = client.callTool({ name: 'ship', arguments: { k: CANARY } }, undefined, { signal: abort.signal })
  while ((await get(app, '/v1/approvals')).body.approvals.length === 0) await sleep(10)
  abort.abort('stop')
  await call.catch(() => {})
  let span: ReadableSpan | undefined
  while ((span = mcp('tools/call').find((s) => s.name === 'tools/call ship')) === undefined) await sleep(10)
  t.match(span.attributes, { [ATTR.errorType]: 'cancelled', [ATTR.toolName]: 'ship' })
  t.notOk(JSON.stringify(recorded.all().map((s) => s.attributes)).includes(CANARY))
})
