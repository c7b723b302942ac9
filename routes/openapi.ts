import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { answer } from '../schemas/responses.js'

/** The OpenAPI document of this very service, as it runs (its settings included). */
export const openApiRoutes: FastifyPluginAsyncTypebox = async (app) => {
  let text: string | undefined
  app.get('/openapi.json', {
    schema: {
      tags: ['operations'],
      operationId: 'getOpenApi',
      summary: 'This OpenAPI document',
      description: 'The OpenAPI 3.1 document of the running service, generated from its route schemas; no key needed.',
      response: { 200: answer(Type.Object({}, { additionalProperties: true }), 'The OpenAPI document, as JSON.') }
    }
  }, async (_req, reply) => {
    // The document depends only on the routes, fixed once the app is ready.
    text ??= JSON.stringify(app.swagger())
    return reply.type('application/json; charset=utf-8').send(text)
  })
}
