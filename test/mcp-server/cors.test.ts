import t from 'tap'
import { buildTestApp, startExecutor, tool } from '../helper.js'

/**
 * CORS of toolgate's MCP endpoint (src/mcp-server/cors.ts): a page on a
 * loopback origin or one in TOOLGATE_MCP_ALLOWED_ORIGINS passes its
 * preflight and reads the answers (the transport's, toolgate's own and the
 * 401 alike); any other origin keeps its 403 and gets no CORS header.
 */
const ALLOWED = 'https://inspector.example'
const executor = await startExecutor(t)
const { app } = await buildTestApp(t, {
  keysDoc: { keys: [{ key: 'key-acme', tenant: 'acme', roles: ['orchestrator'] }] },
  config: { host: '127.0.0.1', mcpAllowedOrigins: [ALLOWED] },
  tools: [tool('look', executor.url, { readOnly: true })]
})
const base = await app.listen({ port: 0, host: '127.0.0.1' })

const HEADERS = { authorization: 'Bearer key-acme', 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'inspector', version: '1' } } })

function preflight (path: string, origin: string): Promise<Response> {
  return fetch(`${base}${path}`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,mcp-session-id,mcp-protocol-version' } })
}

function post (origin: string | undefined, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/mcp`, { method: 'POST', headers: { ...HEADERS, ...(origin === undefined ? {} : { origin }), ...headers }, body })
}

/** The names in a comma-separated header, lower case. */
const names = (value: string | null): string[] => (value ?? '').split(',').map((n) => n.trim().toLowerCase()).filter((n) => n !== '')

t.test('a preflight from an allowed or loopback origin is 204 with the methods and headers an MCP client sends', async (t) => {
  for (const [path, origin] of [['/mcp', ALLOWED], ['/mcp', 'http://localhost:6274'], ['/v1/runs/run-of-a-page/mcp', ALLOWED]] as const) {
    const res = await preflight(path, origin)
    t.equal(res.status, 204, `${path} from ${origin}`)
    t.equal(res.headers.get('access-control-allow-origin'), origin, 'the origin, echoed')
    t.same(names(res.headers.get('access-control-allow-methods')).sort(), ['delete', 'get', 'post'])
    const allowed = names(res.headers.get('access-control-allow-headers'))
    for (const header of ['authorization', 'content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id']) t.ok(allowed.includes(header), `${header} may be sent`)
    t.ok(Number(res.headers.get('access-control-max-age')) > 0)
    t.ok(names(res.headers.get('vary')).includes('origin'))
    t.equal(res.headers.get('access-control-allow-credentials'), null, 'no credentials mode: the key is a header')
    t.equal(await res.text(), '')
  }
})

t.test('the answers to an allowed origin carry its origin and the headers a page must read', async (t) => {
  const opened = await post(ALLOWED, INITIALIZE)
  t.equal(opened.status, 200)
  t.equal(opened.headers.get('access-control-allow-origin'), ALLOWED, "the transport's answer")
  const exposed = names(opened.headers.get('access-control-expose-headers'))
  for (const header of ['mcp-session-id', 'toolgate-run-id', 'www-authenticate']) t.ok(exposed.includes(header), `${header} may be read`)
  t.ok(names(opened.headers.get('vary')).includes('origin'))
  await opened.text()
  const session = opened.headers.get('mcp-session-id')!
  t.teardown(async () => { await fetch(`${base}/mcp`, { method: 'DELETE', headers: { ...HEADERS, 'mcp-session-id': session } }) })
  const called = await post(ALLOWED, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'look', arguments: {} } }), { 'mcp-session-id': session })
  t.equal(called.status, 200)
  t.equal(called.headers.get('access-control-allow-origin'), ALLOWED, "toolgate's own answer to a tools/call")
  await called.text()
  const noKey = await post(ALLOWED, INITIALIZE, { authorization: '' })
  t.equal(noKey.status, 401)
  t.equal(noKey.headers.get('access-control-allow-origin'), ALLOWED, 'the page can read why its key was refused')
  t.ok(noKey.headers.get('www-authenticate'))
  await noKey.text()
})

t.test('a disallowed origin keeps its 403, preflight included, with a key or without, and gets no CORS header', async (t) => {
  for (const res of [await preflight('/mcp', 'https://evil.example'), await post('https://evil.example', INITIALIZE), await post('https://evil.example', INITIALIZE, { authorization: '' })]) {
    t.equal(res.status, 403)
    t.equal(res.headers.get('access-control-allow-origin'), null)
    t.equal(res.headers.get('access-control-expose-headers'), null)
    t.equal(res.headers.get('access-control-allow-methods'), null)
    await res.text()
  }
})

t.test('a request without an Origin gets no CORS header; a bare OPTIONS says what the path allows', async (t) => {
  const res = await post(undefined, INITIALIZE)
  t.equal(res.status, 200)
  t.equal(res.headers.get('access-control-allow-origin'), null)
  await res.text()
  const session = res.headers.get('mcp-session-id')!
  await fetch(`${base}/mcp`, { method: 'DELETE', headers: { ...HEADERS, 'mcp-session-id': session } })
  const bare = await fetch(`${base}/mcp`, { method: 'OPTIONS' })
  t.equal(bare.status, 204)
  t.equal(bare.headers.get('access-control-allow-origin'), null)
  t.match(bare.headers.get('allow'), /POST/)
})
