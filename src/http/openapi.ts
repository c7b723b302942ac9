import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify'
import swagger from '@fastify/swagger'
import { ERRORS, type ErrorCode } from '../errors.js'
import { CLIENT_ERROR_RESPONSE, ClientError, problemCodes, problemResponse } from '../../schemas/responses.js'

export const OPENAPI_INFO = {
  title: 'toolgate',
  description: 'A standalone tool-execution service for LLM agents: it prepares, schedules, dispatches and audits the tool calls of each model turn. The reference is in the docs/ folder of the repository.',
  version: '0.1.0',
  license: { name: 'Apache License 2.0', identifier: 'Apache-2.0' }
}

const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

export interface OpenApiOptions {
  /** Whether GET /metrics needs the operator role (TOOLGATE_METRICS_AUTH). */
  metricsAuth: boolean
}

/** Collects the route schemas into an OpenAPI document (openapi.yaml is generated from it). */
export async function registerOpenApi (app: FastifyInstance, opts: OpenApiOptions): Promise<void> {
  app.addSchema(ClientError)
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: OPENAPI_INFO,
      // Relative: the document is served by the service it describes (GET /openapi.json).
      servers: [{ url: '/', description: 'The toolgate service that serves this document' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key from the keys file, as `Authorization: Bearer <key>`.' } } },
      security: [{ bearer: [] }],
      tags: [
        { name: 'runs', description: 'Agent runs' },
        { name: 'batches', description: 'Batches of tool calls' },
        { name: 'receipts', description: 'The action journal' },
        { name: 'tools', description: 'The tool registry (admin)' },
        { name: 'operations', description: 'Metrics, summaries and this document' },
        { name: 'health', description: 'Liveness and readiness' }
      ]
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: ({ schema, url, route }) => ({ schema: withSharedAnswers(schema as RouteSchema | undefined, url, route as RouteOptions, opts) as FastifySchema, url })
  })
}

interface RouteSchema { response?: Record<string, unknown>, params?: unknown, querystring?: unknown, headers?: unknown, security?: unknown, [key: string]: unknown }

/**
 * The errors a route answers because of what it is rather than what it does:
 * a key (401, 403) and its rate limit (429) when it needs one, a body's
 * problems (400, 413, 415) when its method carries one, a bad path or header
 * parameter (400), shedding, draining and closing (503), and a bug
 * (500) anywhere. Merged with the route's own problem responses; a route's
 * non-problem answer for a status (like /readyz's 503) is left as it is.
 */
function withSharedAnswers (schema: RouteSchema | undefined, url: string, route: RouteOptions, opts: OpenApiOptions): RouteSchema | undefined {
  if (schema === undefined) return schema
  const keyed = route.config?.roles !== undefined || (url === '/metrics' && opts.metricsAuth)
  const methods = Array.isArray(route.method) ? route.method : [route.method]
  const shared: ErrorCode[] = ['internal_error']
  if (keyed) shared.push('unauthorized', 'forbidden', 'rate_limited')
  if (methods.some((m) => BODY_METHODS.has(m))) shared.push('invalid_request', 'payload_too_large', 'unsupported_media_type')
  if (schema.params !== undefined || schema.querystring !== undefined || schema.headers !== undefined) shared.push('invalid_request')
  // Even a probe answers 503 while the process closes (fastify's return503OnClosing).
  shared.push('overloaded')

  const response: Record<string, unknown> = { ...schema.response }
  for (const code of shared) {
    const status = String(ERRORS[code].status)
    const existing = response[status]
    if (existing !== undefined && problemCodes(existing) === undefined) continue
    response[status] = problemResponse([...(problemCodes(existing) ?? []), code])
  }
  response['4XX'] ??= CLIENT_ERROR_RESPONSE
  return { ...schema, response, ...(keyed ? {} : { security: [] }) }
}

/** The OpenAPI document of an app, as YAML; openapi.yaml is this text. */
export async function renderOpenApi (app: FastifyInstance): Promise<string> {
  await app.ready()
  return app.swagger({ yaml: true })
}
