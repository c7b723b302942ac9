/**
 * The MCP servers of the `/mcp` bench rows (bench/mcp-endpoint.ts), each in
 * a bench child process: the upstream MCP server (the official SDK's server
 * on Streamable HTTP, with sessions, one read-only tool `look` that answers
 * at once), and a plain proxy in front of it (`mcp-proxy`'s Streamable HTTP
 * server forwarding every request to one upstream client): what an MCP
 * gateway that only routes costs.
 */
import { randomUUID } from 'node:crypto'
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import { ownSignals } from '../src/mcp/request-signals.js'

const TERRAIN = ['grass', 'sand', 'water', 'rock']

/** The upstream's one tool: the tile at x, answered at once. */
export const UPSTREAM_TOOL = 'look'

function upstreamServer (): Server {
  const server = new Server({ name: 'bench-upstream', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [{ name: UPSTREAM_TOOL, description: 'The terrain of the tile x.', inputSchema: { type: 'object', properties: { x: { type: 'integer' } } }, annotations: { readOnlyHint: true } }]
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const x = Number((request.params.arguments as { x?: unknown } | undefined)?.x ?? 0)
    return { content: [{ type: 'text', text: JSON.stringify({ x, terrain: TERRAIN[Math.abs(x * 31) % TERRAIN.length] }) }] }
  })
  return server
}

async function readJson (req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'))
}

/** The upstream MCP server on 127.0.0.1; answers its URL (`/mcp`). */
export async function startUpstream (): Promise<{ url: string, close: () => Promise<void> }> {
  const transports = new Map<string, StreamableHTTPServerTransport>()
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const body = req.method === 'POST' ? await readJson(req) : undefined
      const sessionId = req.headers['mcp-session-id']
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined
      if (transport === undefined) {
        if (!isInitializeRequest(body)) {
          res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","error":{"code":-32000,"message":"no session"},"id":null}')
          return
        }
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          enableJsonResponse: true,
          onsessioninitialized: (id) => { transports.set(id, created) },
          onsessionclosed: (id) => { transports.delete(id) }
        })
        transport = created
        await upstreamServer().connect(created)
      }
      await transport.handleRequest(req, res, body)
    })().catch(() => { if (!res.headersSent) res.writeHead(500).end() })
  })
  http.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const { port } = http.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => {})))
      http.closeAllConnections()
      await new Promise((resolve) => http.close(resolve))
    }
  }
}

async function freePort (): Promise<number> {
  const s = createNetServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const { port } = s.address() as { port: number }
  await new Promise((resolve) => s.close(resolve))
  return port
}

/** `mcp-proxy` in front of the upstream: one upstream session, a proxied server per downstream session. */
export async function startProxy (upstreamUrl: string): Promise<{ url: string, close: () => Promise<void> }> {
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client')
  const { Server: ProxiedServer } = await import('@modelcontextprotocol/server')
  const { proxyServer, startHTTPServer } = await import('mcp-proxy')
  const client = new Client({ name: 'mcp-proxy', version: '1.0.0' })
  // A request signal of its own per upstream request, as the bench's own client and toolgate's connections
  // have (src/mcp/request-signals.ts): with the session's one signal, undici's listeners pile up past Node's
  // limit of 1,500 in a busy round, and the warnings Node then builds (a stack trace each) slow the proxy down.
  await client.connect(new StreamableHTTPClientTransport(new URL(upstreamUrl), { fetch: ownSignals(fetch) }))
  const capabilities = client.getServerCapabilities() ?? {}
  const port = await freePort()
  const proxy = await startHTTPServer({
    host: '127.0.0.1',
    port,
    eventStore: false,
    streamEndpoint: '/mcp',
    createServer: async () => {
      const server = new ProxiedServer(client.getServerVersion() ?? { name: 'proxy', version: '1.0.0' }, { capabilities })
      await proxyServer({ client, server, serverCapabilities: capabilities })
      return server
    }
  })
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await proxy.close()
      await client.close()
    }
  }
}
