import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, get, post, runBatch } from '../helper.js'
import { startFaultServer } from './fault-server.js'

const faults = await startFaultServer()
t.teardown(() => faults.close())

async function send (app: FastifyInstance, method: 'PUT' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number, body: any }> {
  const res = await app.inject({ method, url, ...(body === undefined ? { headers } : { payload: body as object, headers: { 'content-type': 'application/json', ...headers } }) })
  return { status: res.statusCode, body: res.body === '' ? undefined : JSON.parse(res.body) }
}

t.test('PUT adds a Streamable HTTP server, connects it and imports its tools; GET, refresh and DELETE manage it', async (t) => {
  const { app } = await buildTestApp(t)
  const created = await send(app, 'PUT', '/v1/mcp-servers/search', { transport: 'streamableHttp', url: faults.url, headers: { 'x-api-key': 'k-0123-secret' }, include: ['echo'] })
  t.equal(created.status, 201)
  t.match(created.body, { name: 'search', transport: 'streamableHttp', state: 'ready', lastError: null, tools: ['search_echo'], trust: 'untrusted', prefix: 'search_', pinning: 'on', headerNames: ['x-api-key'] })
  t.notOk(JSON.stringify(created.body).includes('k-0123-secret'), 'header values are never shown')
  t.equal((await runBatch(app, [{ id: 'c', name: 'search_echo', arguments: { text: 'hi' } }])).body.results[0].content, 'hi')

  const replaced = await send(app, 'PUT', '/v1/mcp-servers/search', { name: 'search', transport: 'streamableHttp', url: faults.url, include: ['echo', 'fails'] })
  t.equal(replaced.status, 200)
  // Its tools were pinned when first imported: one imported since is new, and waits for an admin.
  t.same(replaced.body.tools, ['search_echo'])
  t.match(replaced.body.lastError, /1 tools in quarantine/)
  const approved = await post(app, '/v1/mcp-servers/search/pins', { approve: ['search_fails'] })
  t.equal(approved.status, 200)
  t.same((await get(app, '/v1/mcp-servers/search')).body.tools, ['search_echo', 'search_fails'])

  const list = await get(app, '/v1/mcp-servers')
  t.same(list.body.mcpServers.map((s: { name: string }) => s.name), ['search'])
  const refreshed = await post(app, '/v1/mcp-servers/search/refresh', {})
  t.equal(refreshed.status, 200)
  t.equal(refreshed.body.state, 'ready')
  t.not(refreshed.body.refreshedAt, null)

  t.equal((await send(app, 'DELETE', '/v1/mcp-servers/search')).status, 204)
  t.equal((await get(app, '/v1/mcp-servers/search')).body.code, 'mcp_server_not_found')
  t.equal((await get(app, '/v1/tools/search_echo')).status, 404, 'its tools went with it')
  const unknown = await runBatch(app, [{ id: 'c', name: 'search_echo', arguments: {} }])
  t.equal(unknown.body.results[0].details.reason, 'unknown_tool')
  t.match(String((await get(app, '/metrics')).body), /toolgate_mcp_server_up(?!\{server="search"\})/)
})

t.test('a stdio server cannot come from the API', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await send(app, 'PUT', '/v1/mcp-servers/files', { transport: 'stdio', command: 'sh', args: ['-c', 'touch /tmp/pwned'] })
  t.equal(res.status, 400)
  t.equal(res.body.code, 'invalid_mcp_server')
  t.match(res.body.detail, /tools file/)
  t.same(app.services.mcp.list(), [])
})

t.test('bad server definitions are 400 invalid_mcp_server with their problems; unknown servers 404', async (t) => {
  const { app } = await buildTestApp(t)
  for (const body of [
    { transport: 'streamableHttp' },
    { transport: 'streamableHttp', url: 'ftp://x/mcp' },
    { transport: 'streamableHttp', url: 'http://u:p@127.0.0.1/mcp' },
    { transport: 'streamableHttp', url: faults.url, tools: { echo: { conflictKey: 'a:{/' } } },
    { transport: 'streamableHttp', url: faults.url, trust: 'maybe' },
    { transport: 'streamableHttp', url: faults.url, name: 'other' }
  ]) {
    const res = await send(app, 'PUT', '/v1/mcp-servers/s', body)
    t.equal(res.status, 400, JSON.stringify(body))
    t.equal(res.body.code, 'invalid_mcp_server')
  }
  t.same(app.services.mcp.list(), [])
  t.equal((await post(app, '/v1/mcp-servers/nope/refresh', {})).status, 404)
  t.equal((await send(app, 'DELETE', '/v1/mcp-servers/nope')).status, 404)
})

t.test('imported tools are changed through their server, not the tool routes', async (t) => {
  const { app } = await buildTestApp(t)
  await send(app, 'PUT', '/v1/mcp-servers/f', { transport: 'streamableHttp', url: faults.url, include: ['echo'] })
  const put = await send(app, 'PUT', '/v1/tools/f_echo', { inputSchema: { type: 'object' }, executor: { url: 'http://127.0.0.1:9/x' } })
  t.equal(put.status, 400)
  t.match(put.body.detail, /imported from MCP server f/)
  t.equal((await send(app, 'DELETE', '/v1/tools/f_echo')).status, 400)
  t.equal((await get(app, '/v1/tools/f_echo')).body.executor.url, 'mcp://f/echo')
})

t.test('the MCP server routes need the admin role', async (t) => {
  const keysDoc = {
    keys: [
      { key: 'admin-key-0123456789ab', tenant: 'ops', roles: ['admin'] },
      { key: 'orch-key-0123456789abc', tenant: 'acme', roles: ['orchestrator'] }
    ]
  }
  const { app } = await buildTestApp(t, { keysDoc })
  const orch = { authorization: 'Bearer orch-key-0123456789abc' }
  t.equal((await get(app, '/v1/mcp-servers')).status, 401)
  t.equal((await get(app, '/v1/mcp-servers', orch)).status, 403)
  t.equal((await send(app, 'PUT', '/v1/mcp-servers/s', { transport: 'streamableHttp', url: faults.url }, orch)).status, 403)
  t.equal((await post(app, '/v1/mcp-servers/s/refresh', {}, orch)).status, 403)
  t.equal((await get(app, '/v1/mcp-servers', { authorization: 'Bearer admin-key-0123456789ab' })).status, 200)
})
