import type { IncomingMessage } from 'node:http'
import t from 'tap'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { plainToolsCall } from '../../src/mcp-server/lean-answers.js'
import { buildTestApp } from '../helper.js'
import { startSdkHttpServer } from '../mcp/sdk-http-server.js'

/**
 * A plain tools/call on an open session is answered by toolgate itself
 * (src/mcp-server/lean-answers.ts): as JSON when the response is the first
 * message about the request, as an event stream from the first message the
 * server sends about it before its response. Anything else goes to the
 * SDK's transport, which answers as it always did.
 */

/** The upstream: `quiet` answers at once; `chatty` logs a line, then answers. */
function upstream (): Server {
  const server = new Server({ name: 'up', version: '1.0.0' }, { capabilities: { tools: {}, logging: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: ['quiet', 'chatty'].map((name) => ({ name, description: name, inputSchema: { type: 'object' as const } }))
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (request.params.name === 'chatty') await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'working on it' } })
    return { content: [{ type: 'text', text: `${request.params.name} done` }] }
  })
  return server
}

const upstreamServer = await startSdkHttpServer(upstream)
t.teardown(() => upstreamServer.close())

const { app } = await buildTestApp(t, { keysDoc: { keys: [{ key: 'key-acme', tenant: 'acme', roles: ['orchestrator', 'admin'] }] }, config: { host: '127.0.0.1' } })
await app.services.mcp.startAll([{ name: 'up', transport: 'streamableHttp', url: upstreamServer.url, prefix: 'up_', trust: 'trusted' }])
const base = await app.listen({ port: 0, host: '127.0.0.1' })

const HEADERS = { authorization: 'Bearer key-acme', 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }

function post (body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/mcp`, { method: 'POST', headers: { ...HEADERS, ...headers }, body: JSON.stringify(body) })
}

/** A session opened as a client opens one: initialize, then initialized. */
async function open (): Promise<string> {
  const res = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })
  await res.text()
  const session = res.headers.get('mcp-session-id')!
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': session })).text()
  t.teardown(async () => { await fetch(`${base}/mcp`, { method: 'DELETE', headers: { ...HEADERS, 'mcp-session-id': session } }) })
  return session
}

/** The JSON-RPC messages of an event stream's `data:` lines. */
function events (text: string): Array<Record<string, unknown>> {
  return text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>)
}

t.test('a plain tools/call whose server sends nothing before its response is answered as JSON', async (t) => {
  const session = await open()
  const res = await post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'up_quiet', arguments: {} } }, { 'mcp-session-id': session })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/json')
  t.equal(res.headers.get('mcp-session-id'), session)
  const answer = await res.json() as { id: number, result: { content: Array<{ text: string }>, isError: boolean, _meta: Record<string, string> } }
  t.equal(answer.id, 7)
  t.same(answer.result.content, [{ type: 'text', text: 'quiet done' }])
  t.equal(answer.result.isError, false)
  t.equal(answer.result._meta['toolgate/status'], 'ok')
})

t.test('a tools/call whose server sends a message before its response is an event stream: the message, then the response', async (t) => {
  const session = await open()
  const res = await post({ jsonrpc: '2.0', id: 'c-8', method: 'tools/call', params: { name: 'up_chatty', arguments: {} } }, { 'mcp-session-id': session })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  t.equal(res.headers.get('mcp-session-id'), session)
  const messages = events(await res.text())
  t.same(messages.map((m) => m.method ?? `response ${String(m.id)}`), ['notifications/message', 'response c-8'])
  t.same((messages[0]!.params as { data: unknown }).data, 'working on it')
  t.same((messages[1]!.result as { content: unknown }).content, [{ type: 'text', text: 'chatty done' }])
})

t.test("a tools/call the SDK's transport refuses is still refused by it", async (t) => {
  const session = await open()
  const call = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'up_quiet', arguments: {} } }
  const unacceptable = await post(call, { 'mcp-session-id': session, accept: 'application/json' })
  t.equal(unacceptable.status, 406)
  const version = await post(call, { 'mcp-session-id': session, 'mcp-protocol-version': '1999-01-01' })
  t.equal(version.status, 400)
  const extra = await post({ ...call, extra: true }, { 'mcp-session-id': session })
  t.equal(extra.status, 400)
  t.match(await extra.json(), { error: { code: -32700 } })
})

t.test('which requests are answered past the SDK transport', async (t) => {
  const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json; charset=utf-8' }
  const req = (h: Record<string, string> = headers, method = 'POST'): IncomingMessage => ({ method, headers: h }) as unknown as IncomingMessage
  const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {}, _meta: { progressToken: 'p' } } }
  t.ok(plainToolsCall(req(), call), 'a tools/call')
  t.ok(plainToolsCall(req(), { jsonrpc: '2.0', id: 'a', method: 'tools/call' }), 'without params (the server answers the error)')
  t.ok(plainToolsCall(req({ ...headers, 'mcp-protocol-version': '2025-11-25' }), call), 'a protocol version the SDK supports')
  const not: Array<[string, IncomingMessage, unknown]> = [
    ['another method', req(), { ...call, method: 'tools/list' }],
    ['a batch', req(), [call]],
    ['a notification', req(), { jsonrpc: '2.0', method: 'tools/call' }],
    ['a null id', req(), { ...call, id: null }],
    ['a fractional id', req(), { ...call, id: 1.5 }],
    ['another jsonrpc', req(), { ...call, jsonrpc: '1.0' }],
    ['an unknown key', req(), { ...call, x: 1 }],
    ['params not an object', req(), { ...call, params: [1] }],
    ['_meta not an object', req(), { ...call, params: { name: 'x', _meta: 'm' } }],
    ['a progress token of another type', req(), { ...call, params: { name: 'x', _meta: { progressToken: true } } }],
    ['a related task', req(), { ...call, params: { name: 'x', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't' } } } }],
    ['an Accept without event streams', req({ ...headers, accept: 'application/json' }), call],
    ['another content type', req({ ...headers, 'content-type': 'text/plain' }), call],
    ['an unsupported protocol version', req({ ...headers, 'mcp-protocol-version': '1999-01-01' }), call],
    ['a GET', req(headers, 'GET'), call]
  ]
  for (const [why, r, body] of not) t.equal(plainToolsCall(r, body), null, why)
})
