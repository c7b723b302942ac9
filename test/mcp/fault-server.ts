import { randomUUID } from 'node:crypto'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { z } from 'zod'

/**
 * A small MCP server (the SDK's McpServer over Streamable HTTP, on
 * 127.0.0.1) whose tools misbehave on purpose. Every tool is annotated
 * readOnlyHint, so a trusted toolgate entry sees reads and an untrusted one
 * writes, of the same tools:
 * - `echo` answers its text; `structured` answers structuredContent;
 *   `mixed` answers a text and an image item;
 * - `fails` answers a result with isError;
 * - `hang` never answers until toolgate cancels it (notifications/cancelled);
 * - `drop` closes the connection once the request arrived;
 * - `fail500` is answered HTTP 500; `rpcerror` a JSON-RPC error.
 */
export interface FaultServer {
  url: string
  port: number
  /** Operation ids (from `_meta`) of every tools/call received, by tool. */
  calls: Array<{ tool: string, operationId: unknown, arguments: unknown, meta: Record<string, unknown> | undefined }>
  /** Request ids of `hang` calls the client cancelled. */
  cancelled: unknown[]
  /** Headers of every request received. */
  headers: Array<Record<string, string | string[] | undefined>>
  /** Resolves when the next `hang` call is cancelled. */
  nextCancel (): Promise<void>
  /** Registers one more tool on every session (each is told its list changed). */
  addTool (name: string): void
  close (): Promise<void>
}

export async function startFaultServer (port = 0): Promise<FaultServer> {
  const calls: FaultServer['calls'] = []
  const cancelled: unknown[] = []
  const headers: FaultServer['headers'] = []
  const servers: McpServer[] = []
  const extraTools: string[] = []
  const transports = new Map<string, StreamableHTTPServerTransport>()
  const cancelWaiters: Array<() => void> = []

  const build = (): McpServer => {
    const server = new McpServer({ name: 'faults', version: '1.0.0' })
    const read = { readOnlyHint: true }
    const text = { text: z.string().optional() }
    server.registerTool('echo', { description: 'Echoes its text.', inputSchema: text, annotations: read }, async ({ text }) => ({ content: [{ type: 'text', text: text ?? '' }] }))
    server.registerTool('structured', { description: 'Answers structured content.', inputSchema: text, annotations: read }, async ({ text }) => ({ content: [{ type: 'text', text: 'see structured' }], structuredContent: { echoed: text ?? '', n: 1 } }))
    server.registerTool('mixed', { description: 'Answers text and an image.', inputSchema: text, annotations: read }, async () => ({ content: [{ type: 'text', text: 'a picture' }, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }] }))
    server.registerTool('fails', { description: 'Answers isError.', inputSchema: text, annotations: read }, async () => ({ isError: true, content: [{ type: 'text', text: 'it broke' }] }))
    server.registerTool('hang', { description: 'Never answers.', inputSchema: text, annotations: read }, async (_args, extra) => {
      await new Promise<void>((resolve) => { extra.signal.addEventListener('abort', () => {
        cancelled.push(extra.requestId)
        for (const w of cancelWaiters.splice(0)) w()
        resolve()
      }) })
      return { content: [{ type: 'text', text: 'too late' }] }
    })
    for (const name of ['drop', 'fail500', 'rpcerror']) {
      server.registerTool(name, { description: `Misbehaves: ${name}.`, inputSchema: text, annotations: read }, async () => ({ content: [{ type: 'text', text: 'unreachable' }] }))
    }
    for (const name of extraTools) addTo(server, name)
    servers.push(server)
    return server
  }
  const addTo = (server: McpServer, name: string): void => {
    server.registerTool(name, { description: `Added later: ${name}.`, inputSchema: { text: z.string().optional() }, annotations: { readOnlyHint: true } }, async () => ({ content: [{ type: 'text', text: name }] }))
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    headers.push(req.headers)
    let body: unknown
    if (req.method === 'POST') {
      const chunks: Buffer[] = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      const msg = body as { method?: string, id?: unknown, params?: { name?: string, arguments?: unknown, _meta?: Record<string, unknown> } }
      if (msg.method === 'tools/call') {
        const tool = msg.params?.name ?? ''
        calls.push({ tool, operationId: msg.params?._meta?.['toolgate/operationId'], arguments: msg.params?.arguments, meta: msg.params?._meta })
        if (tool === 'drop') { req.socket.destroy(); return }
        if (tool === 'fail500') { res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error'); return }
        if (tool === 'rpcerror') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'no such widget' } }))
          return
        }
      }
    }
    const sid = req.headers['mcp-session-id']
    let transport = typeof sid === 'string' ? transports.get(sid) : undefined
    if (transport === undefined) {
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => { transports.set(id, created) }
      })
      transport = created
      await build().connect(transport)
    }
    await transport.handleRequest(req, res, body)
  }

  const http: Server = createServer((req, res) => {
    handle(req, res).catch(() => { if (!res.headersSent) res.writeHead(500).end() })
  })
  // A client that reconnects while the server closes must not keep it open.
  let closing = false
  http.on('connection', (socket) => { if (closing) socket.destroy() })
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve))
  const actual = (http.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${actual}/mcp`,
    port: actual,
    calls,
    cancelled,
    headers,
    nextCancel: () => new Promise<void>((resolve) => { cancelWaiters.push(resolve) }),
    addTool (name) {
      extraTools.push(name)
      for (const server of servers) addTo(server, name)
    },
    async close () {
      closing = true
      const closed = new Promise<void>((resolve) => http.close(() => resolve()))
      for (const server of servers) await server.close().catch(() => {})
      http.closeAllConnections()
      await closed
    }
  }
}
