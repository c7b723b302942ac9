import t from 'tap'
import { buildTestApp, get, startExecutor, tool } from '../helper.js'

/**
 * Every request of the MCP endpoint answered with an HTTP error status is
 * counted in toolgate_mcp_requests_total{outcome="refused"}, whoever
 * refused it: the SDK's transport (Accept, protocol version, message
 * shape), the HTTP layer before the route (key, body), or the route
 * (session). Its method is the label when it is one toolgate names,
 * `other` otherwise or when no method could be read.
 */
const executor = await startExecutor(t)
const { app } = await buildTestApp(t, {
  keysDoc: { keys: [{ key: 'key-acme', tenant: 'acme', roles: ['orchestrator'] }] },
  config: { host: '127.0.0.1' },
  tools: [tool('look', executor.url, { readOnly: true })]
})
const base = await app.listen({ port: 0, host: '127.0.0.1' })

const HEADERS = { authorization: 'Bearer key-acme', 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }
const CUSTOM_METHOD = 'vendor/canary-method-5e2a'

async function send (init: { method?: string, headers?: Record<string, string>, body?: string }): Promise<number> {
  const res = await fetch(`${base}/mcp`, { method: init.method ?? 'POST', headers: { ...HEADERS, ...init.headers }, ...(init.body === undefined ? {} : { body: init.body }) })
  await res.text()
  return res.status
}

async function open (): Promise<string> {
  const res = await fetch(`${base}/mcp`, { method: 'POST', headers: HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) })
  await res.text()
  const session = res.headers.get('mcp-session-id')!
  t.teardown(async () => { await fetch(`${base}/mcp`, { method: 'DELETE', headers: { ...HEADERS, 'mcp-session-id': session } }) })
  return session
}

/** The metrics page's value of the counter for `method` and `outcome`. */
async function counted (method: string, outcome = 'refused'): Promise<number> {
  const line = (await get(app, '/metrics')).body.split('\n').find((l: string) => l.startsWith(`toolgate_mcp_requests_total{method="${method}",outcome="${outcome}"} `))
  return line === undefined ? 0 : Number(line.split(' ').at(-1))
}

const CALL = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'look', arguments: {} } })

t.test("requests the SDK's transport refuses are counted refused, under their method", async (t) => {
  const session = await open()
  const inSession = { 'mcp-session-id': session }
  const before = { call: await counted('tools/call'), other: await counted('other') }
  t.equal(await send({ headers: { ...inSession, accept: 'application/json' }, body: CALL }), 406, 'an Accept without event streams')
  t.equal(await send({ headers: { ...inSession, 'mcp-protocol-version': '1999-01-01' }, body: CALL }), 400, 'an unsupported protocol version')
  t.equal(await send({ headers: inSession, body: JSON.stringify({ ...JSON.parse(CALL), extra: true }) }), 400, 'a message the transport cannot read as JSON-RPC')
  t.equal(await send({ headers: { ...inSession, 'content-type': 'application/merge-patch+json' }, body: CALL }), 415, 'a JSON type that is not application/json')
  t.equal(await send({ method: 'GET', headers: { ...inSession, accept: 'application/json' } }), 406, 'a GET that does not accept an event stream')
  t.equal(await counted('tools/call'), before.call + 4)
  t.equal(await counted('other'), before.other + 1, 'the GET: no method')
})

t.test('requests refused before the route, or by it, are counted refused too', async (t) => {
  const session = await open()
  const before = { call: await counted('tools/call'), other: await counted('other') }
  t.equal(await send({ headers: { 'mcp-session-id': session }, body: '{"jsonrpc": "2.0", "id": 4, "method": ' }), 400, 'malformed JSON')
  t.equal(await send({ headers: { 'mcp-session-id': session, 'content-type': 'text/plain' }, body: CALL }), 415, 'a body that is not JSON')
  t.equal(await send({ headers: { authorization: 'Bearer wrong-key', 'mcp-session-id': session }, body: CALL }), 401, 'a wrong key')
  t.equal(await send({ headers: { 'mcp-session-id': 'no-such-session' }, body: CALL }), 404, 'an unknown session')
  t.equal(await send({ body: CALL }), 400, 'no session and not initialize')
  t.equal(await counted('tools/call'), before.call + 2, 'the unknown session and the missing one: the body was read')
  t.equal(await counted('other'), before.other + 3, 'the bodies that could not be read, and the key refused before the body')
})

t.test("a client's own method name never becomes a label", async (t) => {
  const session = await open()
  const before = await counted('other')
  const body = JSON.stringify({ jsonrpc: '2.0', id: 5, method: CUSTOM_METHOD, params: {} })
  t.equal(await send({ headers: { 'mcp-session-id': session, accept: 'application/json' }, body }), 406)
  t.equal(await counted('other'), before + 1)
  t.notOk((await get(app, '/metrics')).body.includes(CUSTOM_METHOD))
})

t.test('a request the client cancels, which gets no answer, is counted cancelled', async (t) => {
  const session = await open()
  const before = await counted('tools/list', 'cancelled')
  const both = JSON.stringify([{ jsonrpc: '2.0', id: 'l1', method: 'tools/list' }, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'l1' } }])
  // The SDK's stream of a batch waits for every answer, and the cancelled request has none: the client lets go of it.
  const stop = new AbortController()
  const sent = fetch(`${base}/mcp`, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': session }, body: both, signal: stop.signal }).then(async (res) => { await res.text() }).catch(() => {})
  let now = before
  for (let i = 0; i < 100 && now === before; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    now = await counted('tools/list', 'cancelled')
  }
  t.equal(now, before + 1)
  t.equal(await counted('tools/list', 'ok'), 0, 'and not answered')
  stop.abort()
  await sent
})
