import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import t from 'tap'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { buildTestApp, runBatch } from '../helper.js'

/**
 * A server's progress during a call resets the call's timeout, up to the
 * server entry's maxTimeoutMs in all (SPEC section 18). The server is the
 * SDK's: its `slow` tool reports progress every 50 ms for 1.2 s, so it
 * outlasts a 400 ms timeout only because each report resets it.
 * (The SDK's request timers are its own, on the real clock.)
 */
const STEPS = 24
const GAP_MS = 50

function build (): Server {
  const server = new Server({ name: 'slow', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: 'slow', description: 'Reports progress while it works.', inputSchema: { type: 'object' as const, properties: {} } }] }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = request.params._meta?.progressToken
    for (let i = 1; i <= STEPS; i++) {
      await new Promise((resolve) => setTimeout(resolve, GAP_MS))
      if (progressToken === undefined) continue
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: i, total: STEPS } }).catch(() => {})
    }
    return { content: [{ type: 'text', text: progressToken === undefined ? 'no progress token' : 'done' }] }
  })
  return server
}

const transports = new Map<string, StreamableHTTPServerTransport>()
const http = createServer((req: IncomingMessage, res: ServerResponse) => {
  void (async () => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
    const sid = req.headers['mcp-session-id']
    let transport = typeof sid === 'string' ? transports.get(sid) : undefined
    if (transport === undefined) {
      const fresh = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (id) => { transports.set(id, fresh) } })
      await build().connect(fresh)
      transport = fresh
    }
    await transport.handleRequest(req, res, body)
  })().catch(() => { if (!res.headersSent) res.writeHead(500).end() })
})
await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
const url = `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`
t.teardown(async () => {
  for (const tr of transports.values()) await tr.close().catch(() => {})
  http.closeAllConnections()
  await new Promise((resolve) => http.close(resolve))
})

t.test("a call whose server keeps reporting progress outlasts its timeout, on the batch route too (progress is always asked for)", async (t) => {
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url, trust: 'trusted', timeoutMs: 400 }])
  const res = await runBatch(app, [{ id: 'c1', name: 'p_slow', arguments: {} }])
  t.equal(res.status, 200)
  t.equal(res.body.results[0].status, 'ok', JSON.stringify(res.body.results[0]))
  t.match(JSON.stringify(res.body.results[0].content), /done/)
})

t.test('progress resets the timeout no further than maxTimeoutMs in all', async (t) => {
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url, trust: 'trusted', timeoutMs: 400, maxTimeoutMs: 600 }])
  const res = await runBatch(app, [{ id: 'c1', name: 'p_slow', arguments: {} }])
  t.equal(res.status, 200)
  t.not(res.body.results[0].status, 'ok', 'the call is cut at maxTimeoutMs')
  // A timeout, not the server's error: a write cut this way would be uncertain, never a definitive error.
  t.equal(res.body.results[0].details.cause, 'timeout')
  const view = await app.inject({ method: 'GET', url: '/v1/mcp-servers/p' })
  t.equal(view.json().maxTimeoutMs, 600, 'the server entry shows its maxTimeoutMs')
})
