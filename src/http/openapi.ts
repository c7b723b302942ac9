import type { FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'

export const OPENAPI_INFO = {
  title: 'toolgate',
  description: 'A standalone tool-execution service for LLM agents: it prepares, schedules, dispatches and audits the tool calls of each model turn. The reference is in the docs/ folder of the repository.',
  version: '0.1.0'
}

/** Collects the route schemas into an OpenAPI document (openapi.yaml is generated from it). */
export async function registerOpenApi (app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: OPENAPI_INFO,
      servers: [{ url: 'http://localhost:8080' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
      tags: [
        { name: 'runs', description: 'Agent runs' },
        { name: 'batches', description: 'Batches of tool calls' },
        { name: 'receipts', description: 'The action journal' },
        { name: 'tools', description: 'The tool registry (admin)' },
        { name: 'operations', description: 'Metrics and summaries' },
        { name: 'health', description: 'Liveness and readiness' }
      ]
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) }
  })
}

/** The OpenAPI document of an app, as YAML; openapi.yaml is this text. */
export async function renderOpenApi (app: FastifyInstance): Promise<string> {
  await app.ready()
  return app.swagger({ yaml: true })
}
