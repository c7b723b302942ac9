/**
 * A protected MCP server and its authorization server on one port, for the
 * OAuth client-credentials tests: RFC 9728 protected-resource metadata
 * (named by the 401's WWW-Authenticate, at a path no well-known lookup would
 * find unless `wellKnownOnly`), RFC 8414 metadata, a token endpoint that
 * checks client_secret_basic or a private_key_jwt assertion (node:crypto),
 * and `/mcp` (stateless, one `echo` tool) that answers 401 without a token
 * it issued.
 */
import { type KeyObject, randomUUID, verify } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

export interface TokenRequest { form: Record<string, string>, authorization: string | undefined, claims?: Record<string, unknown>, header?: Record<string, unknown>, verified?: boolean }

export interface OAuthServerOptions {
  clientId: string
  /** The secret client_secret_basic must carry. */
  secret?: string
  /** The key a private_key_jwt assertion must verify with. */
  publicKey?: KeyObject
  /** expires_in of each token. @default 3600 */
  expiresIn?: number
  /** Leave the 401's resource_metadata out: the client must find the metadata at its well-known URI. */
  wellKnownOnly?: boolean
}

export interface OAuthServer {
  url: string
  base: string
  tokenRequests: TokenRequest[]
  /** Paths asked for, in order (`GET /.well-known/...`, `POST /mcp 401`...). */
  seen: string[]
  /** Tokens issued, in order. */
  issued: string[]
  /** Forgets every token issued: the next MCP request is answered 401. */
  revokeAll (): void
  close (): Promise<void>
}

function mcpServer (): Server {
  const server = new Server({ name: 'protected', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' as const, properties: { text: { type: 'string' } } } }] }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => ({ content: [{ type: 'text', text: `echo: ${String(request.params.arguments?.text)}` }] }))
  return server
}

async function readBody (req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function json (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
}

export async function startOAuthServer (opts: OAuthServerOptions): Promise<OAuthServer> {
  const tokenRequests: TokenRequest[] = []
  const seen: string[] = []
  const issued: string[] = []
  let valid = new Set<string>()
  let base = ''
  const http = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0]!
      if (req.method === 'GET' && path === '/meta/prm') {
        seen.push('GET /meta/prm')
        return json(res, 200, { resource: `${base}/mcp`, authorization_servers: [base] })
      }
      if (req.method === 'GET' && path === '/.well-known/oauth-protected-resource/mcp') {
        seen.push(`GET ${path}`)
        return opts.wellKnownOnly === true ? json(res, 200, { resource: `${base}/mcp`, authorization_servers: [base] }) : json(res, 404, {})
      }
      if (req.method === 'GET' && path === '/.well-known/oauth-authorization-server') {
        seen.push(`GET ${path}`)
        return json(res, 200, { issuer: base, token_endpoint: `${base}/token`, grant_types_supported: ['client_credentials'], token_endpoint_auth_methods_supported: ['client_secret_basic', 'private_key_jwt'] })
      }
      if (req.method === 'POST' && path === '/token') {
        seen.push('POST /token')
        const form = Object.fromEntries(new URLSearchParams(await readBody(req)))
        const request: TokenRequest = { form, authorization: req.headers.authorization }
        tokenRequests.push(request)
        let ok = false
        if (opts.secret !== undefined) {
          const [id, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString('utf8').split(':').map((p) => decodeURIComponent(p.replace(/\+/g, ' ')))
          ok = req.headers.authorization?.startsWith('Basic ') === true && id === opts.clientId && secret === opts.secret
        } else if (opts.publicKey !== undefined && typeof form.client_assertion === 'string') {
          const [h, c, s] = form.client_assertion.split('.')
          request.header = JSON.parse(Buffer.from(h!, 'base64url').toString('utf8')) as Record<string, unknown>
          request.claims = JSON.parse(Buffer.from(c!, 'base64url').toString('utf8')) as Record<string, unknown>
          const alg = request.header.alg
          request.verified = verify('sha256', Buffer.from(`${h}.${c}`), alg === 'ES256' ? { key: opts.publicKey, dsaEncoding: 'ieee-p1363' } : opts.publicKey, Buffer.from(s!, 'base64url'))
          ok = request.verified && form.client_assertion_type === 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' &&
            request.claims.iss === opts.clientId && request.claims.sub === opts.clientId && request.claims.aud === base
        }
        if (!ok || form.grant_type !== 'client_credentials') return json(res, 401, { error: 'invalid_client', error_description: 'the secret is wrong, it was: hunter2' })
        const token = `tok-${issued.length + 1}-${randomUUID()}`
        issued.push(token)
        valid.add(token)
        return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: opts.expiresIn ?? 3600 })
      }
      if (path === '/mcp') {
        const token = (req.headers.authorization ?? '').replace(/^Bearer /, '')
        if (!valid.has(token)) {
          seen.push(`${req.method ?? ''} /mcp 401`)
          await readBody(req)
          const challenge = opts.wellKnownOnly === true ? 'Bearer error="invalid_token"' : `Bearer error="invalid_token", resource_metadata="${base}/meta/prm"`
          return json(res, 401, { error: 'invalid_token' }, { 'www-authenticate': challenge })
        }
        seen.push(`${req.method ?? ''} /mcp`)
        if (req.method !== 'POST') return json(res, 405, {})
        const body = JSON.parse(await readBody(req)) as unknown
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
        const server = mcpServer()
        await server.connect(transport)
        res.on('close', () => { void transport.close(); void server.close() })
        await transport.handleRequest(req, res, body)
        return
      }
      json(res, 404, {})
    })().catch(() => { if (!res.headersSent) res.writeHead(500).end() })
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(http.address() as { port: number }).port}`
  return {
    url: `${base}/mcp`,
    base,
    tokenRequests,
    seen,
    issued,
    revokeAll: () => { valid = new Set() },
    close: async () => {
      http.closeAllConnections()
      await new Promise((resolve) => http.close(resolve))
    }
  }
}
