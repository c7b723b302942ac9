import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'

/**
 * An MCP server of the SDK's over Streamable HTTP on 127.0.0.1, for the tests
 * whose upstream is a real SDK server: `build` makes a fresh `Server` for each
 * session (the SDK's server holds one transport). A request naming a session
 * the server does not hold is answered 404, as the transport's own sessions
 * are; a session closed by its client is forgotten.
 */
export interface SdkHttpServer {
  /** The endpoint, `http://127.0.0.1:PORT/mcp`. */
  url: string
  close (): Promise<void>
}

export async function startSdkHttpServer (build: () => Server, port = 0): Promise<SdkHttpServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>()
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
    const id = req.headers['mcp-session-id']
    let transport = typeof id === 'string' ? transports.get(id) : undefined
    if (transport === undefined) {
      if (typeof id === 'string') {
        res.writeHead(404).end()
        return
      }
      const fresh = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (sid) => { transports.set(sid, fresh) } })
      fresh.onclose = () => { if (fresh.sessionId !== undefined) transports.delete(fresh.sessionId) }
      await build().connect(fresh)
      transport = fresh
    }
    await transport.handleRequest(req, res, body)
  }
  const http = createServer((req, res) => { handle(req, res).catch(() => { if (!res.headersSent) res.writeHead(500).end() }) })
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve))
  const address = http.address() as { port: number }
  return {
    url: `http://127.0.0.1:${address.port}/mcp`,
    async close () {
      for (const t of transports.values()) await t.close().catch(() => {})
      http.closeAllConnections()
      await new Promise((resolve) => http.close(resolve))
    }
  }
}
