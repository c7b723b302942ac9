import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Services } from '../src/services.js'
import { answer } from '../schemas/responses.js'
import { readiness } from '../src/telemetry/health-metrics.js'
import { exposition } from '../src/telemetry/exposition.js'

const Health = Type.Object({ status: Type.String() })

/** Liveness and readiness; no key needed. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get('/healthz', {
    schema: {
      tags: ['health'],
      operationId: 'getHealth',
      summary: 'The process is alive',
      description: 'Answers as long as the process runs; no key needed. Point liveness probes here.',
      response: { 200: answer(Health, 'The process is alive.', { status: 'ok' }) }
    }
  }, async () => ({ status: 'ok' }))

  app.get('/readyz', {
    schema: {
      tags: ['health'],
      operationId: 'getReadiness',
      summary: 'The service takes work',
      description: 'Ready when the process is not draining and its store answers; no key needed. Point readiness probes and load balancers here.',
      response: {
        200: answer(Health, 'Ready to take work.', { status: 'ready' }),
        503: answer(Health, 'Not ready: `draining` (shutting down) or `store_unavailable` (the store does not answer).', { status: 'store_unavailable' })
      }
    }
  }, async (_req, reply) => {
    const status = await readiness(services)
    return status === 'ready' ? { status } : reply.code(503).send({ status })
  })

  app.get('/metrics', {
    schema: {
      tags: ['operations'],
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      description: 'Prometheus text exposition format, or OpenMetrics when `Accept` asks for `application/openmetrics-text` (as Prometheus does); gzipped when `Accept-Encoding` allows `gzip`. Open, unless TOOLGATE_METRICS_AUTH=true makes it need the operator role.',
      produces: ['text/plain', 'application/openmetrics-text'],
      response: { 200: answer(Type.String(), 'The metrics, in Prometheus text or OpenMetrics format.') }
    }
  }, async (req, reply) => {
    const { body, contentType, encoding } = await exposition(services.telemetry.metrics.registry, req.headers.accept, req.headers['accept-encoding'])
    reply.header('vary', 'Accept, Accept-Encoding')
    if (encoding !== undefined) reply.header('content-encoding', encoding)
    // A gzipped body is a Buffer, sent as it is: the string of the response schema is what it decodes to.
    return reply.type(contentType).send(body as string)
  })
}
