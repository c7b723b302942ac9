import { audit } from '../src/http/audit.js'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProblemError } from '../src/errors.js'
import { InvalidMcpServerError, NotQuarantinedError } from '../src/mcp/servers.js'
import type { Services } from '../src/services.js'
import { answer, problems } from '../schemas/responses.js'
import { McpPinApproval, McpPinList, McpServerList, McpServerParams, McpServerPutBody } from '../schemas/mcp-server.js'

const admin = { roles: ['admin'] as const }
const View = Type.Ref('McpServer')

/**
 * MCP servers (admin role). Only Streamable HTTP servers can be added here:
 * a stdio server is a process toolgate starts, and an API key must not be
 * able to start processes; those come from the tools file alone.
 */
export const mcpServerRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { mcp } = services
  const notFound = (name: string): ProblemError => new ProblemError('mcp_server_not_found', `No MCP server ${name}`)

  app.get('/v1/mcp-servers', {
    config: admin,
    schema: {
      tags: ['mcp'],
      operationId: 'listMcpServers',
      summary: 'List MCP servers and their state',
      description: 'Every MCP server toolgate imports tools from, from the tools file and the API, with its state, last error and imported tools (admin role).',
      response: { 200: answer(McpServerList, 'The MCP servers.') }
    }
  }, async () => ({ mcpServers: mcp.list() }))

  app.get('/v1/mcp-servers/:name', {
    config: admin,
    schema: {
      tags: ['mcp'],
      operationId: 'getMcpServer',
      summary: 'One MCP server',
      description: 'Its state (`connecting`, `ready`, `down`), `lastError`, the imported tool names and when they were listed; header values are never shown (admin role).',
      params: McpServerParams,
      response: { 200: answer(View, 'The MCP server.'), ...problems('mcp_server_not_found') }
    }
  }, async (req) => {
    const view = mcp.view(req.params.name)
    if (view === undefined) throw notFound(req.params.name)
    return view
  })

  app.put('/v1/mcp-servers/:name', {
    config: { ...admin, validationCode: 'invalid_mcp_server' },
    // The transport is checked before the body schema, so a stdio body gets the reason, not a list of schema mismatches.
    preValidation: async (req) => {
      const transport = (req.body as { transport?: unknown } | null)?.transport
      if (transport === 'stdio') throw new ProblemError('invalid_mcp_server', 'A stdio server can only come from the tools file: the API does not start processes.')
    },
    schema: {
      tags: ['mcp'],
      operationId: 'putMcpServer',
      summary: 'Add or replace a Streamable HTTP MCP server',
      description: 'Connects the server, lists its tools and imports them; answers once it has been tried, with its state (a server that cannot be reached is `down` and retried with backoff). A `stdio` server can only come from the tools file: such a body is `400 invalid_mcp_server` (admin role).',
      params: McpServerParams,
      body: answer(McpServerPutBody, 'A Streamable HTTP server definition; `name` may be left out.'),
      response: {
        200: answer(View, 'The server was replaced.'),
        201: answer(View, 'The server was added.'),
        ...problems('invalid_request', 'invalid_mcp_server')
      }
    }
  }, async (req, reply) => {
    const { name } = req.params
    if (req.body.name !== undefined && req.body.name !== name) {
      throw new ProblemError('invalid_mcp_server', `/name: ${req.body.name} does not match the path's ${name}`)
    }
    try {
      const { view, created } = await mcp.put({ ...req.body, name })
      audit(req, created ? 'mcp_server.created' : 'mcp_server.replaced', name)
      return reply.code(created ? 201 : 200).send(view)
    } catch (err) {
      if (err instanceof InvalidMcpServerError) throw new ProblemError('invalid_mcp_server', err.message, { problems: err.problems })
      throw err
    }
  })

  app.delete('/v1/mcp-servers/:name', {
    config: admin,
    schema: {
      tags: ['mcp'],
      operationId: 'deleteMcpServer',
      summary: 'Remove an MCP server',
      description: 'Disconnects the server (a stdio process is stopped) and removes its tools; later calls to them are rejected as `unknown_tool` (admin role).',
      params: McpServerParams,
      response: { 204: answer(Type.Null(), 'The server was removed.'), ...problems('mcp_server_not_found') }
    }
  }, async (req, reply) => {
    if (!(await mcp.delete(req.params.name))) throw notFound(req.params.name)
    audit(req, 'mcp_server.deleted', req.params.name)
    return reply.code(204).send(null)
  })

  app.post('/v1/mcp-servers/:name/refresh', {
    config: admin,
    schema: {
      tags: ['mcp'],
      operationId: 'refreshMcpServer',
      summary: "List an MCP server's tools again",
      description: 'Reads every page of the server\'s tools/list and replaces its tools; a server that is down is connected first (admin role).',
      params: McpServerParams,
      response: { 200: answer(View, 'The server after the refresh.'), ...problems('mcp_server_not_found') }
    }
  }, async (req) => {
    const view = await mcp.refresh(req.params.name)
    if (view === undefined) throw notFound(req.params.name)
    audit(req, 'mcp_server.refreshed', req.params.name)
    return view
  })

  app.get('/v1/mcp-servers/:name/pins', {
    config: admin,
    schema: {
      tags: ['mcp'],
      operationId: 'getMcpServerPins',
      summary: "An MCP server's pinned and quarantined tools",
      description: 'Each tool of the server with its state (`pinned`, or `quarantined`: changed or new since the tools were pinned), its pinned and current definitions, and what changed in words (admin role).',
      params: McpServerParams,
      response: { 200: answer(McpPinList, 'The pinned and quarantined tools.'), ...problems('mcp_server_not_found') }
    }
  }, async (req) => {
    const tools = await mcp.pinsOf(req.params.name)
    if (tools === undefined) throw notFound(req.params.name)
    return { tools }
  })

  app.post('/v1/mcp-servers/:name/pins', {
    config: admin,
    schema: {
      tags: ['mcp'],
      operationId: 'approveMcpServerPins',
      summary: 'Approve quarantined tools',
      description: 'Pins the current definitions of the named quarantined tools (imported names) and imports them; a name not in quarantine is `400 invalid_request` and nothing is approved (admin role).',
      params: McpServerParams,
      body: answer(McpPinApproval, 'The imported names of the tools to approve.'),
      response: { 200: answer(McpPinList, 'The pinned and quarantined tools after the approval.'), ...problems('invalid_request', 'mcp_server_not_found') }
    }
  }, async (req) => {
    try {
      const tools = await mcp.approve(req.params.name, req.body.approve)
      if (tools === undefined) throw notFound(req.params.name)
      audit(req, 'mcp_server.pins_approved', req.params.name)
      return { tools }
    } catch (err) {
      if (err instanceof NotQuarantinedError) throw new ProblemError('invalid_request', `Not in quarantine: ${err.names.join(', ')}`)
      throw err
    }
  })
}
