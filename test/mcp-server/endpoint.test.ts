import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, get, holdCalls, post, startExecutor, tool } from '../helper.js'

const KEYS = {
  keys: [
    { key: 'key-acme', tenant: 'acme', roles: ['orchestrator', 'admin'], name: 'acme-agent' },
    { key: 'key-acme-world', tenant: 'acme', roles: ['orchestrator'], scopes: ['world:admin'], name: 'acme-world' },
    { key: 'key-zeta', tenant: 'zeta', roles: ['orchestrator'] },
    { key: 'key-admin-only', tenant: 'acme', roles: ['admin'] }
  ]
}
const ARGUMENT_CANARY = 'canary-argument-7f1d'

const executor = await startExecutor(t)
const { app, logs } = await buildTestApp(t, {
  keysDoc: KEYS,
  config: { host: '127.0.0.1' },
  tools: [
    tool('look', executor.url, { readOnly: true }),
    tool('build', executor.url, { conflictKey: 'tile:{/x}' }),
    tool('files.write', executor.url),
    tool('needs_ok', executor.url, { requiresApproval: true }),
    tool('scoped', executor.url, { requiredScopes: ['world:admin'] })
  ]
})
const base = await app.listen({ port: 0, host: '127.0.0.1' })

async function connect (t: Test, path = '/mcp', key = 'key-acme', capabilities: Record<string, unknown> = {}): Promise<{ client: Client, transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}${path}`), { requestInit: { headers: { authorization: `Bearer ${key}` } } })
  const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities })
  await client.connect(transport)
  t.teardown(() => client.close())
  return { client, transport }
}

function raw (path: string, init: { method?: string, headers?: Record<string, string>, body?: unknown } = {}): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: init.method ?? 'POST',
    headers: { authorization: 'Bearer key-acme', 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
  })
}
const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }

t.test('initialize on /mcp creates a run with the server defaults and names it in the answer', async (t) => {
  const res = await raw('/mcp', { body: INITIALIZE })
  t.equal(res.status, 200)
  const runId = res.headers.get('toolgate-run-id')
  t.ok(runId)
  t.ok(res.headers.get('mcp-session-id'))
  const text = await res.text()
  const data = JSON.parse(text.includes('data:') ? text.split('\ndata: ')[1]!.split('\n')[0]! : text)
  t.equal(data.result._meta['toolgate/runId'], runId)
  t.equal(data.result.protocolVersion, '2025-06-18')
  const run = await get(app as FastifyInstance, `/v1/runs/${runId}`, { authorization: 'Bearer key-acme' })
  t.equal(run.body.state, 'active')
  t.equal(run.body.toolExecution, 'safeParallel')
})

t.test('tools/list offers the run tools under model-safe names, with annotations from the definitions', async (t) => {
  const { client } = await connect(t)
  const { tools } = await client.listTools()
  const byName = new Map(tools.map((x) => [x.name, x]))
  const writeName = [...byName.keys()].find((n) => n.startsWith('files_write'))!
  t.match(writeName, /^files_write_[0-9a-f]{8}$/, 'a name with a dot is offered under a mapped one')
  t.same([...byName.keys()].sort(), ['build', writeName, 'look', 'needs_ok'], 'no tool the key lacks scopes for')
  for (const name of byName.keys()) t.match(name, /^[A-Za-z0-9_-]{1,64}$/)
  t.same(byName.get('look')!.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: false })
  t.same(byName.get('build')!.annotations, { readOnlyHint: false, destructiveHint: true, idempotentHint: false })
  t.equal(byName.get(writeName)!.title, 'files.write')
})

t.test('tools/call runs one call of the run and shows it in its batches and summary', async (t) => {
  const { client, transport } = await connect(t)
  const before = executor.calls.length
  const writeName = (await client.listTools()).tools.find((x) => x.title === 'files.write')!.name
  const result = await client.callTool({ name: writeName, arguments: { k: ARGUMENT_CANARY } })
  t.equal(result.isError, false)
  t.same(JSON.parse((result.content as Array<{ text: string }>)[0]!.text), { ok: true, tool: 'files.write' })
  t.equal(result._meta?.['toolgate/status'], 'ok')
  t.match(result._meta?.['toolgate/callId'], /^mcp_/)
  t.match(result._meta?.['toolgate/operationId'], /^op_/)
  t.equal(executor.calls.length, before + 1)
  t.same(executor.calls.at(-1)!.arguments, { k: ARGUMENT_CANARY })
  const runId = executor.calls.at(-1)!.runId
  const summary = await get(app as FastifyInstance, `/v1/runs/${runId}/summary`, { authorization: 'Bearer key-acme' })
  t.equal(summary.body.turns, 1)
  t.ok(transport.sessionId)
})

t.test('a call refused by preparation is an isError result the model can correct; an unknown tool is -32602', async (t) => {
  const { client } = await connect(t)
  const bad = await client.callTool({ name: 'build', arguments: { x: 'not a number' } })
  t.equal(bad.isError, true)
  t.equal(bad._meta?.['toolgate/status'], 'rejected')
  t.equal(bad._meta?.['toolgate/reason'], 'invalid_arguments')
  await t.rejects(client.callTool({ name: 'nope', arguments: {} }), { code: -32602 })
  await t.rejects(client.callTool({ name: 'scoped', arguments: {} }), { code: -32602 }, 'a tool the key may not use is not offered')
})

t.test('a session bound to a run created with options takes its allow-list, and its DELETE leaves the run', async (t) => {
  const run = await post(app as FastifyInstance, '/v1/runs', { tools: ['look'] }, { authorization: 'Bearer key-acme' })
  const { client, transport } = await connect(t, `/v1/runs/${run.body.runId}/mcp`)
  t.same((await client.listTools()).tools.map((x) => x.name), ['look'])
  await transport.terminateSession()
  const after = await get(app as FastifyInstance, `/v1/runs/${run.body.runId}`, { authorization: 'Bearer key-acme' })
  t.equal(after.body.state, 'active')
})

t.test('the DELETE of a session on /mcp ends the run it created; later calls there say the run ended', async (t) => {
  const { client, transport } = await connect(t)
  await client.callTool({ name: 'look', arguments: {} })
  const runId = executor.calls.at(-1)!.runId
  await transport.terminateSession()
  const after = await get(app as FastifyInstance, `/v1/runs/${runId}`, { authorization: 'Bearer key-acme' })
  t.not(after.body.state, 'active')
})

t.test('once the run has ended every call answers isError saying so', async (t) => {
  const run = await post(app as FastifyInstance, '/v1/runs', {}, { authorization: 'Bearer key-acme' })
  const { client } = await connect(t, `/v1/runs/${run.body.runId}/mcp`)
  await post(app as FastifyInstance, `/v1/runs/${run.body.runId}/cancel`, undefined, { authorization: 'Bearer key-acme' })
  const result = await client.callTool({ name: 'look', arguments: {} })
  t.equal(result.isError, true)
  t.equal(result._meta?.['toolgate/reason'], 'run_not_active')
  t.match((result.content as Array<{ text: string }>)[0]!.text, /no more tool calls run/)
  t.match(JSON.parse((result.content as Array<{ text: string }>)[0]!.text), { state: 'cancelled', message: 'This agent run has been cancelled; no more tool calls run in it.' }, 'the state the run is in')
  const ended = await post(app as FastifyInstance, '/v1/runs', {}, { authorization: 'Bearer key-acme' })
  const second = await connect(t, `/v1/runs/${ended.body.runId}/mcp`)
  await app.inject({ method: 'DELETE', url: `/v1/runs/${ended.body.runId}`, headers: { authorization: 'Bearer key-acme' } })
  const afterEnd = await second.client.callTool({ name: 'look', arguments: {} })
  t.match(JSON.parse((afterEnd.content as Array<{ text: string }>)[0]!.text), { state: 'ended', message: 'This agent run has ended; no more tool calls run in it.' })
})

t.test('concurrent calls of one run never overlap same-key writes', async (t) => {
  const { client } = await connect(t)
  const gate = holdCalls(executor, 'build')
  const first = client.callTool({ name: 'build', arguments: { x: 1 } })
  const second = client.callTool({ name: 'build', arguments: { x: 1 } })
  await gate.started
  const running = executor.calls.filter((c) => c.tool === 'build' && c.endedAt === null).length
  t.equal(running, 1, 'the second write waits for the first')
  gate.release()
  const [a, b] = await Promise.all([first, second])
  t.equal(a.isError, false)
  t.equal(b.isError, false)
  executor.on('build', () => ({ content: { ok: true } }))
})

t.test('a session id of another tenant is 404 and tells nothing', async (t) => {
  const { transport } = await connect(t)
  const res = await raw('/mcp', { headers: { authorization: 'Bearer key-zeta', 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-06-18' }, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } })
  t.equal(res.status, 404)
  t.equal(((await res.json()) as { error: { message: string } }).error.message, 'Session not found')
})

t.test("a session is its key's: another key of the same tenant does not find it, so cannot borrow its scopes", async (t) => {
  const { client, transport } = await connect(t, '/mcp', 'key-acme-world')
  t.ok((await client.listTools()).tools.some((x) => x.name === 'scoped'), 'the key with the scope is offered the scoped tool')
  const before = executor.calls.length
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'scoped', arguments: {} } }
  const res = await raw('/mcp', { headers: { authorization: 'Bearer key-acme', 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-06-18' }, body: call })
  t.equal(res.status, 404, 'a key of the same tenant without the scope')
  t.equal(((await res.json()) as { error: { message: string } }).error.message, 'Session not found')
  const list = await raw('/mcp', { headers: { authorization: 'Bearer key-acme', 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-06-18' }, body: { jsonrpc: '2.0', id: 3, method: 'tools/list' } })
  t.equal(list.status, 404)
  t.equal(executor.calls.length, before, 'nothing was sent')
  t.equal((await client.callTool({ name: 'scoped', arguments: {} })).isError, false, 'the key that opened it still uses it')
})

t.test('malformed params of tools/call and logging/setLevel are -32602 saying what is wrong, not internal errors', async (t) => {
  const { transport } = await connect(t)
  const headers = { 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-06-18' }
  const cases: Array<[string, unknown, RegExp]> = [
    ['tools/call', undefined, /needs params/],
    ['tools/call', { name: 7 }, /params\.name/],
    ['tools/call', { name: 'look', arguments: [1] }, /arguments must be an object/],
    ['tools/call', { name: 'look', arguments: 'x' }, /arguments must be an object/],
    ['logging/setLevel', { level: 'loud' }, /one of debug, info/]
  ]
  for (const [method, params, message] of cases) {
    const res = await raw('/mcp', { headers, body: { jsonrpc: '2.0', id: 9, method, ...(params === undefined ? {} : { params }) } })
    const text = await res.text()
    const answer = JSON.parse(text.includes('data:') ? text.split('\ndata: ')[1]!.split('\n')[0]! : text) as { id: number, error?: { code: number, message: string } }
    t.equal(answer.id, 9)
    t.equal(answer.error?.code, -32602, `${method} ${JSON.stringify(params)}`)
    t.match(answer.error?.message, message)
  }
})

t.test('an initialize the transport cannot answer (Accept, Content-Type) is refused before any run is created', async (t) => {
  const runs = async (): Promise<number> => (await get(app as FastifyInstance, '/v1/runs?limit=100', { authorization: 'Bearer key-acme' })).body.runs.length
  const before = await runs()
  t.ok(before < 100, 'every run is counted')
  const notAccepted = await raw('/mcp', { headers: { accept: 'application/json' }, body: INITIALIZE })
  t.equal(notAccepted.status, 406)
  t.match(((await notAccepted.json()) as { error: { message: string } }).error.message, /Not Acceptable/)
  const wrongType = await raw('/mcp', { headers: { 'content-type': 'application/merge-patch+json' }, body: INITIALIZE })
  t.equal(wrongType.status, 415)
  t.equal(await runs(), before, 'no run was created')
})

t.test('requests without a session that are not initialize, and unknown methods, get JSON-RPC errors', async (t) => {
  const res = await raw('/mcp', { body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } })
  t.equal(res.status, 400)
  t.equal(((await res.json()) as { jsonrpc: string }).jsonrpc, '2.0')
  const { client } = await connect(t)
  await t.rejects(client.request({ method: 'resources/list', params: {} } as never, ToolListChangedNotificationSchema as never), { code: -32601 })
})

t.test('keys and roles: no key is 401, a key without the orchestrator role is 403', async (t) => {
  t.equal((await raw('/mcp', { headers: { authorization: '' }, body: INITIALIZE })).status, 401)
  t.equal((await raw('/mcp', { headers: { authorization: 'Bearer key-admin-only' }, body: INITIALIZE })).status, 403)
})

t.test('DNS-rebinding protection: a foreign Origin or, on a loopback listener, a foreign Host is 403', async (t) => {
  t.equal((await raw('/mcp', { headers: { origin: 'https://evil.example' }, body: INITIALIZE })).status, 403)
  t.equal((await raw('/mcp', { headers: { origin: 'http://localhost:5173' }, body: INITIALIZE })).status, 200)
  const rebinding = await app.inject({ method: 'POST', url: '/mcp', headers: { host: 'evil.example', authorization: 'Bearer key-acme', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, payload: INITIALIZE })
  t.equal(rebinding.statusCode, 403)
})

t.test('a session hears list_changed when the tools change', async (t) => {
  const { client } = await connect(t)
  const heard = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()))
  // The standalone stream carries server notifications, and the client opens it on its own
  // after initialize: change the tools until one notice gets through (bounded).
  let wasHeard = false
  void heard.then(() => { wasHeard = true })
  for (let i = 0; i < 50 && !wasHeard; i++) {
    const put = await app.inject({ method: 'PUT', url: '/v1/tools/extra', headers: { authorization: 'Bearer key-acme', 'content-type': 'application/json' }, payload: tool('extra', executor.url, { description: `version ${i}` }) })
    t.ok(put.statusCode === 201 || put.statusCode === 200)
    await Promise.race([heard, new Promise((resolve) => setTimeout(resolve, 100))])
  }
  t.ok(wasHeard, 'notifications/tools/list_changed arrived')
  t.ok((await client.listTools()).tools.some((x) => x.name === 'extra'))
})

t.test('a held call waits for a decision from the approvals route', async (t) => {
  const { client } = await connect(t)
  const call = client.callTool({ name: 'needs_ok', arguments: { k: 'x' } })
  let entry: { runId: string, batchId: string, callId: string } | undefined
  for (let i = 0; i < 100 && entry === undefined; i++) {
    entry = (await get(app as FastifyInstance, '/v1/approvals', { authorization: 'Bearer key-acme' })).body.approvals?.[0]
    if (entry === undefined) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.ok(entry, 'the call is in the inbox')
  const decided = await post(app as FastifyInstance, `/v1/runs/${entry!.runId}/batches/${entry!.batchId}/approvals`, { decisions: [{ callId: entry!.callId, approve: false, reason: 'not now' }] }, { authorization: 'Bearer key-acme' })
  t.equal(decided.status, 200)
  const result = await call
  t.equal(result.isError, true)
  t.equal(result._meta?.['toolgate/status'], 'denied')
})

t.test('a client that declared elicitation is asked, and its answer decides the call', async (t) => {
  const { client } = await connect(t, '/mcp', 'key-acme', { elicitation: { form: {} } })
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js')
  let asked = ''
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked = req.params.message
    return { action: 'accept', content: { approve: true } }
  })
  const result = await client.callTool({ name: 'needs_ok', arguments: { k: 'elicited' } })
  t.equal(result.isError, false)
  t.equal(result._meta?.['toolgate/status'], 'ok')
  t.match(asked, /needs_ok/)
})

t.test('the sessions gauge and the requests counter are on /metrics; no arguments in logs', async (t) => {
  const metrics = await get(app as FastifyInstance, '/metrics')
  t.match(metrics.body, /toolgate_mcp_sessions \d+/)
  t.match(metrics.body, /toolgate_mcp_requests_total\{method="tools\/call",outcome="ok"\} \d+/)
  t.match(metrics.body, /toolgate_mcp_requests_total\{method="tools\/call",outcome="tool_error"\} \d+/)
  t.notOk(logs.some((l) => l.includes(ARGUMENT_CANARY)), 'arguments never reach the log')
  t.notOk(metrics.body.includes(ARGUMENT_CANARY))
})
