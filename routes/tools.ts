import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProblemError } from '../src/errors.js'
import { audit } from '../src/http/audit.js'
import type { Services } from '../src/services.js'
import { InvalidToolError } from '../src/tools/registry.js'
import { problems } from '../schemas/common.js'
import { ToolList, ToolNameParams, ToolPutBody } from '../schemas/tool.js'
import { answer } from '../schemas/responses.js'
import { TOOL_EXAMPLE } from '../schemas/examples.js'

const admin = { roles: ['admin'] as const }

/** Tool registry management (admin role). */
export const toolRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { tools } = services

  app.get('/v1/tools', {
    config: admin,
    schema: {
      tags: ['tools'],
      operationId: 'listTools',
      summary: 'List registered tools',
      description: 'Every tool definition of the registry, as registered (admin role).',
      response: { 200: answer(ToolList, 'The registered tools.', { tools: [TOOL_EXAMPLE] }) }
    }
  }, async () => ({ tools: tools.list().map((t) => t.definition) }))

  app.get('/v1/tools/:name', {
    config: admin,
    schema: {
      tags: ['tools'],
      operationId: 'getTool',
      summary: 'One tool definition',
      description: 'The definition registered under this name (admin role).',
      params: ToolNameParams,
      response: { 200: answer(Type.Ref('ToolDefinition'), 'The tool definition.', TOOL_EXAMPLE), ...problems('tool_not_found') }
    }
  }, async (req) => {
    const tool = tools.get(req.params.name)
    if (tool === undefined) throw new ProblemError('tool_not_found', `No tool ${req.params.name}`)
    return tool.definition
  })

  app.put('/v1/tools/:name', {
    config: { ...admin, validationCode: 'invalid_tool' },
    schema: {
      tags: ['tools'],
      operationId: 'putTool',
      summary: 'Register or replace a tool',
      description: "Registers the definition under the path's name (a `name` in the body must match it). Its schema, conflict-key template and projection are compiled now: any fault is `400 invalid_tool` with `problems` listing each. The tool lives in this process; replicas should share a tools file.",
      params: ToolNameParams,
      body: answer(ToolPutBody, 'A tool definition; `name` may be left out.', TOOL_EXAMPLE),
      response: {
        200: answer(Type.Ref('ToolDefinition'), 'The tool was replaced.'),
        201: answer(Type.Ref('ToolDefinition'), 'The tool was registered.', TOOL_EXAMPLE),
        ...problems('invalid_request', 'invalid_tool')
      }
    }
  }, async (req, reply) => {
    const { name } = req.params
    if (req.body.name !== undefined && req.body.name !== name) {
      throw new ProblemError('invalid_tool', `/name: ${req.body.name} does not match the path's ${name}`)
    }
    try {
      const { tool, created } = tools.put({ ...req.body, name })
      audit(req, created ? 'tool.created' : 'tool.replaced', name)
      return reply.code(created ? 201 : 200).send(tool.definition)
    } catch (err) {
      if (err instanceof InvalidToolError) throw new ProblemError('invalid_tool', err.message, { problems: err.problems })
      throw err
    }
  })

  app.delete('/v1/tools/:name', {
    config: admin,
    schema: {
      tags: ['tools'],
      operationId: 'deleteTool',
      summary: 'Remove a tool',
      description: 'Removes the tool from the registry; later calls to it are rejected as `unknown_tool` (admin role).',
      params: ToolNameParams,
      response: { 204: answer(Type.Null(), 'The tool was removed.'), ...problems('tool_not_found', 'invalid_tool') }
    }
  }, async (req, reply) => {
    const owner = tools.ownerOf(req.params.name)
    if (owner !== undefined) throw new ProblemError('invalid_tool', `${req.params.name} is imported from MCP server ${owner}; exclude it there instead`)
    if (!tools.delete(req.params.name)) throw new ProblemError('tool_not_found', `No tool ${req.params.name}`)
    audit(req, 'tool.deleted', req.params.name)
    return reply.code(204).send(null)
  })
}
