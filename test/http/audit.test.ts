/** Admin changes (tools, MCP servers) write an audit line: who, what, never a secret. */
import t from 'tap'
import { buildTestApp, startExecutor, tool } from '../helper.js'
import { startFaultServer } from '../mcp/fault-server.js'
import { scrape } from '../telemetry/scrape.js'

const ADMIN_KEY = 'admin-key-0123456789abcdef'
const keysDoc = { keys: [{ key: ADMIN_KEY, name: 'ops-laptop', tenant: 'ops', roles: ['admin', 'operator'] }] }
const auth = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }

t.test('PUT and DELETE of a tool and of an MCP server each write one admin change line with tenant, key name, action and target; a read writes none', async (t) => {
  const ex = await startExecutor(t)
  const faults = await startFaultServer()
  t.teardown(() => faults.close())
  const { app, logs } = await buildTestApp(t, { keysDoc })
  const send = async (method: 'PUT' | 'DELETE' | 'POST' | 'GET', url: string, payload?: object): Promise<number> =>
    (await app.inject({ method, url, headers: payload === undefined ? { authorization: auth.authorization } : auth, ...(payload === undefined ? {} : { payload }) })).statusCode
  t.equal(await send('PUT', '/v1/tools/paint', tool('paint', ex.url)), 201)
  t.equal(await send('PUT', '/v1/tools/paint', tool('paint', ex.url)), 200)
  t.equal(await send('DELETE', '/v1/tools/paint'), 204)
  t.equal(await send('DELETE', '/v1/tools/paint'), 404, 'a refused change is no change')
  t.equal(await send('PUT', '/v1/mcp-servers/search', { transport: 'streamableHttp', url: faults.url, headers: { 'x-api-key': 'mcp-secret-zz55' }, include: ['echo'] }), 201)
  const m = await scrape(app)
  t.ok(m.has('toolgate_tool_calls_total', { tool: 'search_echo', status: 'ok' }), 'an imported MCP tool is exported at 0 too')
  t.equal(await send('GET', '/v1/mcp-servers/search'), 200)
  t.equal(await send('GET', '/v1/mcp-servers'), 200)
  t.equal(await send('POST', '/v1/mcp-servers/search/refresh'), 200)
  t.equal(await send('DELETE', '/v1/mcp-servers/search'), 204)

  const audits = logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'admin change')
  t.strictSame(audits.map((l) => [l.action, l.target]), [
    ['tool.created', 'paint'], ['tool.replaced', 'paint'], ['tool.deleted', 'paint'],
    ['mcp_server.created', 'search'], ['mcp_server.refreshed', 'search'], ['mcp_server.deleted', 'search']
  ])
  for (const line of audits) {
    t.match(line, { level: 30, tenant: 'ops', keyName: 'ops-laptop' })
    t.type(line.reqId, 'string')
  }
  t.notOk(logs.some((l) => l.includes(ADMIN_KEY) || l.includes('mcp-secret-zz55')), 'neither the key nor a server header is logged')
})
