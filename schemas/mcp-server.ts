import { Type, type Static } from '@sinclair/typebox'
import { ToolNamePattern } from './common.js'
import { ToolDefinition } from './tool.js'

/**
 * A per-tool override of an imported MCP tool: every field of a tool
 * definition except `name`, `inputSchema` and `executor`, as the tool
 * definition schema validates it. Derived from that schema, so a field added
 * to tool definitions is an override at once.
 */
export const McpToolOverride = Type.Partial(Type.Omit(ToolDefinition, ['name', 'inputSchema', 'executor']), { additionalProperties: false })

const ServerName = Type.String({ pattern: ToolNamePattern })
const RemoteToolName = Type.String({ minLength: 1, maxLength: 256 })

/** What every server definition holds beside its transport. */
const Common = {
  name: ServerName,
  trust: Type.Optional(Type.Union([Type.Literal('untrusted'), Type.Literal('trusted')], { default: 'untrusted', description: 'Whether readOnlyHint and idempotentHint are believed.' })),
  prefix: Type.Optional(Type.String({ maxLength: 63, pattern: '^[A-Za-z0-9_.-]*$', description: "Prepended to each imported tool's name; default the server's name and an underscore (model APIs refuse dots in tool names)." })),
  pinning: Type.Optional(Type.Union([Type.Literal('off'), Type.Literal('on')], { description: 'Whether tool definitions are pinned and changes quarantined until an admin approves them; default on for untrusted servers, off for trusted ones.' })),
  include: Type.Optional(Type.Array(RemoteToolName, { maxItems: 1024, uniqueItems: true, description: "Only these of the server's tools (its own names)." })),
  exclude: Type.Optional(Type.Array(RemoteToolName, { maxItems: 1024, uniqueItems: true, description: "None of these of the server's tools (its own names)." })),
  timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 3_600_000, default: 30000, description: 'Timeout of each tools/call.' })),
  maxTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 36_000_000, description: "Longest a tools/call may take in all while the server's progress notifications reset its timeout; default 10 times timeoutMs." })),
  tools: Type.Optional(Type.Record(RemoteToolName, McpToolOverride, { description: "Overrides by the server's own tool name; they win over annotations." }))
}

/** An environment variable a secret may be read from, so that the tools file holds none (SPEC §18). */
export const SECRET_ENV_PATTERN = '^MCP_SECRET_[A-Z0-9_]{1,100}$'
const SecretEnv = Type.String({ pattern: SECRET_ENV_PATTERN, description: 'The name of an environment variable of toolgate that holds the secret (MCP_SECRET_*).' })
const OAuthUrl = Type.String({ minLength: 1, maxLength: 2048 })

/** OAuth 2.1 client credentials for a Streamable HTTP server (SPEC §18): one of the client's secret or a private key. */
export const McpOAuth = Type.Object({
  clientId: Type.String({ minLength: 1, maxLength: 512 }),
  clientSecret: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Sent by HTTP Basic (client_secret_basic). Never shown or logged.' })),
  clientSecretEnv: Type.Optional(SecretEnv),
  privateKeyJwt: Type.Optional(Type.Object({
    privateKey: Type.Optional(Type.String({ minLength: 1, maxLength: 16384, description: 'PKCS#8 or PKCS#1/SEC1 PEM. Never shown or logged.' })),
    privateKeyEnv: Type.Optional(SecretEnv),
    alg: Type.Union([Type.Literal('RS256'), Type.Literal('ES256')]),
    kid: Type.Optional(Type.String({ minLength: 1, maxLength: 256 }))
  }, { additionalProperties: false, description: 'A signed JWT assertion (private_key_jwt, RFC 7523) in place of a secret.' })),
  tokenUrl: Type.Optional(OAuthUrl),
  issuer: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: "The authorization server's issuer: discovery must find this one (else credentials go wherever the MCP server's metadata points); the JWT assertion's aud." })),
  scope: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
  resource: Type.Optional(OAuthUrl)
}, { additionalProperties: false })
export type McpOAuth = Static<typeof McpOAuth>

const HeaderValues = Type.Record(Type.String({ minLength: 1, maxLength: 256, pattern: '^[!#$%&\'*+.^_`|~0-9A-Za-z-]+$' }), Type.String({ maxLength: 8192 }))

export const McpHttpServer = Type.Object({
  ...Common,
  transport: Type.Literal('streamableHttp'),
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  headers: Type.Optional(HeaderValues),
  oauth: Type.Optional(McpOAuth)
}, { additionalProperties: false })

export const McpStdioServer = Type.Object({
  ...Common,
  transport: Type.Literal('stdio'),
  command: Type.String({ minLength: 1, maxLength: 4096 }),
  args: Type.Optional(Type.Array(Type.String({ maxLength: 65536 }), { maxItems: 1024 })),
  env: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 1024 }), Type.String({ maxLength: 65536 }))),
  cwd: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 }))
}, { additionalProperties: false })

/** An MCP server as the tools file's `mcpServers` holds it. */
export const McpServerDefinition = Type.Union([McpStdioServer, McpHttpServer])
export type McpServerDefinition = Static<typeof McpServerDefinition>
export type McpToolOverride = Static<typeof McpToolOverride>

/** PUT /v1/mcp-servers/{name}: a Streamable HTTP server only; the name may come from the path alone. */
export const McpServerPutBody = Type.Composite([
  Type.Omit(McpHttpServer, ['name']),
  Type.Object({ name: Type.Optional(ServerName) })
], { additionalProperties: false })

/** A server as the admin API shows it: never a header value or an environment value. */
export const McpServerView = Type.Object({
  name: Type.String(),
  transport: Type.Union([Type.Literal('stdio'), Type.Literal('streamableHttp')]),
  url: Type.Optional(Type.String()),
  command: Type.Optional(Type.String()),
  headerNames: Type.Optional(Type.Array(Type.String(), { description: 'The names of the headers sent; their values are never shown.' })),
  oauth: Type.Optional(Type.Object({
    clientId: Type.String(),
    method: Type.Union([Type.Literal('client_secret_basic'), Type.Literal('private_key_jwt')]),
    tokenUrl: Type.Optional(Type.String()),
    issuer: Type.Optional(Type.String()),
    scope: Type.Optional(Type.String()),
    resource: Type.Optional(Type.String()),
    secretFrom: Type.Optional(Type.String({ description: 'The environment variable the secret or key is read from.' }))
  }, { additionalProperties: false, description: 'How toolgate gets its access token; never the secret, the key or the token.' })),
  trust: Type.Union([Type.Literal('untrusted'), Type.Literal('trusted')]),
  prefix: Type.String(),
  pinning: Type.Union([Type.Literal('off'), Type.Literal('on')]),
  include: Type.Optional(Type.Array(Type.String())),
  exclude: Type.Optional(Type.Array(Type.String())),
  timeoutMs: Type.Integer(),
  maxTimeoutMs: Type.Integer(),
  overrides: Type.Record(Type.String(), Type.Object({}, { additionalProperties: true })),
  state: Type.Union([Type.Literal('connecting'), Type.Literal('ready'), Type.Literal('down')]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  tools: Type.Array(Type.String(), { description: 'The imported tool names.' }),
  refreshedAt: Type.Union([Type.String(), Type.Null()])
}, { $id: 'McpServer', additionalProperties: false })
export type McpServerView = Static<typeof McpServerView>

export const McpServerList = Type.Object({ mcpServers: Type.Array(Type.Ref('McpServer')) })
export const McpServerParams = Type.Object({ name: ServerName })

/** GET /v1/mcp-servers/{name}/pins (SPEC §18). */
export const McpPinList = Type.Object({
  tools: Type.Array(Type.Object({
    name: Type.String({ description: 'The imported name.' }),
    serverToolName: Type.String({ description: "The server's own name." }),
    state: Type.Union([Type.Literal('pinned'), Type.Literal('quarantined')]),
    pinned: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], { description: 'The pinned definition; null for a tool new since the pins were taken.' }),
    current: Type.Object({}, { additionalProperties: true, description: 'The definition the server lists now.' }),
    changes: Type.Array(Type.String(), { description: 'What differs, in words.' })
  }, { additionalProperties: false }))
})

/** POST /v1/mcp-servers/{name}/pins: approve quarantined tools by imported name. */
export const McpPinApproval = Type.Object({
  approve: Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { minItems: 1, maxItems: 1000 })
}, { additionalProperties: false })
