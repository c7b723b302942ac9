import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { principalOf } from '../src/http/auth.js'
import type { McpGateway, Refusal } from '../src/mcp-server/gateway.js'
import { RunIdParams, problems } from '../schemas/common.js'
import { answer } from '../schemas/responses.js'

/** What each method answers when the transport takes the request. */
const ANSWERS = {
  POST: {
    200: { description: 'The JSON-RPC answer to a request, as JSON or as a server-sent event stream that ends with it.' },
    202: { description: 'A notification or a response from the client was accepted.' }
  },
  GET: { 200: { description: "The session's server-sent event stream." } },
  DELETE: { 200: { description: 'The session ended.' } }
} as const

const PREFLIGHT_ANSWERS = { 204: answer(Type.Null(), 'The origin may use the endpoint: the CORS headers say how.') }
const PREFLIGHT_DESCRIPTION = "A browser's CORS preflight, answered without a key (browsers send none). From a loopback origin or one listed in `TOOLGATE_MCP_ALLOWED_ORIGINS` it is 204 with `Access-Control-Allow-Origin` (the origin, echoed), the methods and headers a page may send and `Access-Control-Max-Age`; the answers to that origin's requests carry `Access-Control-Allow-Origin` and the headers a page may read (`Mcp-Session-Id`, `Toolgate-Run-Id`, `WWW-Authenticate`, `Retry-After`, `X-Request-Id`). Any other origin is 403, as its requests are, without CORS headers."

const DESCRIPTION = {
  POST: 'A JSON-RPC message of the MCP Streamable HTTP transport (protocol 2025-06-18 or 2025-11-25). Without `Mcp-Session-Id` it must be `initialize`, which opens a session (its id in the `Mcp-Session-Id` header of the answer, its run id in `Toolgate-Run-Id` and in the result\'s `_meta`). The answer is JSON or a server-sent event stream, as the transport decides; send `Accept: application/json, text/event-stream`.',
  GET: "The session's stream of server messages (`list_changed` notifications and the like), as server-sent events.",
  DELETE: 'Ends the session: its calls that have not started are cancelled, and the run it created (on `/mcp`) ends.'
} as const

/** toolgate as an MCP server (SPEC section 16): every MCP client gets the batch route's rules. */
export const mcpRoutes: FastifyPluginAsyncTypebox<{ gateway: McpGateway }> = async (app, { gateway }) => {
  // DNS-rebinding protection and CORS (src/mcp-server/cors.ts), before the key is checked: a refused
  // origin is 403 with or without a key, and every other answer carries the CORS headers, a 401 and the
  // transport's answers (written past fastify) included. A callback hook: no promise.
  app.addHook('onRequest', (req, reply, done) => {
    const refused = req.method === 'OPTIONS' ? null : gateway.refusedOrigin(req.headers)
    if (refused !== null) {
      void refuse(reply, refused)
      return
    }
    const headers = gateway.cors(req.headers)
    for (const name in headers) reply.raw.setHeader(name, headers[name]!)
    done()
  })
  // Every request answered with an HTTP error status, by this route, the transport, or the HTTP layer
  // before them (key, body, rate limit), is counted `refused`. The status is read once the answer is
  // sent, whoever wrote it. A preflight is not a JSON-RPC message, and is not counted.
  const countRefused = (req: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    if (reply.statusCode >= 400) gateway.refused(req.body)
    done()
  }

  const handle = async (req: FastifyRequest, reply: FastifyReply, boundRunId: string | null, path: string): Promise<FastifyReply> => {
    const refusal = await gateway.handle({
      raw: req.raw,
      res: reply.raw,
      principal: principalOf(req),
      boundRunId,
      path,
      body: req.method === 'POST' ? req.body : undefined,
      hijack: () => reply.hijack()
    })
    if (refusal === null) return reply
    return refuse(reply, refusal)
  }

  for (const method of ['POST', 'GET', 'DELETE'] as const) {
    app.route({
      method,
      url: '/mcp',
      config: { roles: ['orchestrator'] as const },
      schema: {
        tags: ['mcp'],
        operationId: `mcp${method[0]}${method.slice(1).toLowerCase()}`,
        summary: `MCP endpoint (${method}): a session on a run of its own`,
        description: `${DESCRIPTION[method]} On \`/mcp\` the session's \`initialize\` creates a run with the server's defaults.`,
        response: { ...ANSWERS[method], ...problems('unauthorized', 'forbidden', 'payload_too_large', 'quota_exceeded', 'overloaded') }
      },
      onResponse: countRefused,
      handler: async (req, reply) => handle(req, reply, null, '/mcp')
    })
    app.route({
      method,
      url: '/v1/runs/:runId/mcp',
      config: { roles: ['orchestrator'] as const },
      schema: {
        tags: ['mcp'],
        operationId: `mcpRun${method[0]}${method.slice(1).toLowerCase()}`,
        summary: `MCP endpoint (${method}): a session bound to an existing run`,
        description: `${DESCRIPTION[method]} On this path \`initialize\` binds the session to the run (created with \`POST /v1/runs\` and its options); the session's DELETE leaves the run as it is.`,
        params: RunIdParams,
        response: { ...ANSWERS[method], ...problems('unauthorized', 'forbidden', 'run_not_found', 'payload_too_large') }
      },
      onResponse: countRefused,
      handler: async (req, reply) => handle(req, reply, (req.params as { runId: string }).runId, `/v1/runs/${(req.params as { runId: string }).runId}/mcp`)
    })
  }

  // CORS preflights: answered without a key (a browser sends none with one); the refused ones are not counted.
  const preflight = (req: FastifyRequest, reply: FastifyReply): void => {
    const preflighted = gateway.preflight(req.headers)
    if ('headers' in preflighted) void reply.code(204).headers(preflighted.headers).send(null)
    else void refuse(reply, preflighted)
  }
  app.route({
    method: 'OPTIONS',
    url: '/mcp',
    schema: { tags: ['mcp'], operationId: 'mcpPreflight', summary: 'MCP endpoint (OPTIONS): CORS preflight', description: PREFLIGHT_DESCRIPTION, response: PREFLIGHT_ANSWERS },
    handler: preflight
  })
  app.route({
    method: 'OPTIONS',
    url: '/v1/runs/:runId/mcp',
    schema: { tags: ['mcp'], operationId: 'mcpRunPreflight', summary: 'MCP endpoint of a run (OPTIONS): CORS preflight', description: PREFLIGHT_DESCRIPTION, params: RunIdParams, response: PREFLIGHT_ANSWERS },
    handler: preflight
  })
}

/** A refusal of the route, as the transport words its own: a JSON-RPC error without an id. */
function refuse (reply: FastifyReply, refusal: Refusal): FastifyReply {
  return reply.code(refusal.status).type('application/json').send({ jsonrpc: '2.0', error: { code: refusal.code, message: refusal.message }, id: null })
}
