import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Services } from '../src/services.js'
import { answer } from '../schemas/responses.js'
import { readiness } from '../src/telemetry/health-metrics.js'

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
      description: 'Prometheus text exposition format. Open, unless TOOLGATE_METRICS_AUTH=true makes it need the operator role.',
      produces: ['text/plain'],
      response: { 200: answer(Type.String(), 'The metrics, in Prometheus text format.') }
    }
  }, async (_req, reply) => {
    const { registry } = services.telemetry.metrics
    const text = await registry.metrics()
    return reply.type(registry.contentType).send(text)
  })
}
