import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProblemError } from '../src/errors.js'
import type { Services } from '../src/services.js'
import { InvalidToolError } from '../src/tools/registry.js'
import { problems } from '../schemas/common.js'
import { ToolList, ToolNameParams, ToolPutBody } from '../schemas/tool.js'

const admin = { roles: ['admin'] as const }

/** Tool registry management (admin role). */
export const toolRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { tools } = services

  app.get('/v1/tools', {
    config: admin,
    schema: { tags: ['tools'], summary: 'List registered tools', response: { 200: ToolList, ...problems(401, 403) } }
  }, async () => ({ tools: tools.list().map((t) => t.definition) }))

  app.get('/v1/tools/:name', {
    config: admin,
    schema: { tags: ['tools'], summary: 'One tool definition', params: ToolNameParams, response: { 200: Type.Ref('ToolDefinition'), ...problems(401, 403, 404) } }
  }, async (req) => {
    const tool = tools.get(req.params.name)
    if (tool === undefined) throw new ProblemError('tool_not_found', `No tool ${req.params.name}`)
    return tool.definition
  })

  app.put('/v1/tools/:name', {
    config: { ...admin, validationCode: 'invalid_tool' },
    schema: {
      tags: ['tools'],
      summary: 'Register or replace a tool',
      params: ToolNameParams,
      body: ToolPutBody,
      response: { 200: Type.Ref('ToolDefinition'), 201: Type.Ref('ToolDefinition'), ...problems(400, 401, 403) }
    }
  }, async (req, reply) => {
    const { name } = req.params
    if (req.body.name !== undefined && req.body.name !== name) {
      throw new ProblemError('invalid_tool', `/name: ${req.body.name} does not match the path's ${name}`)
    }
    try {
      const { tool, created } = tools.put({ ...req.body, name })
      return reply.code(created ? 201 : 200).send(tool.definition)
    } catch (err) {
      if (err instanceof InvalidToolError) throw new ProblemError('invalid_tool', err.message, { problems: err.problems })
      throw err
    }
  })

  app.delete('/v1/tools/:name', {
    config: admin,
    schema: { tags: ['tools'], summary: 'Remove a tool', params: ToolNameParams, response: { 204: Type.Null(), ...problems(401, 403, 404) } }
  }, async (req, reply) => {
    if (!tools.delete(req.params.name)) throw new ProblemError('tool_not_found', `No tool ${req.params.name}`)
    return reply.code(204).send(null)
  })
}
