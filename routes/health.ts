import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Services } from '../src/services.js'

const Health = Type.Object({ status: Type.String() })

/** Liveness and readiness; no key needed. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get('/healthz', {
    schema: { tags: ['health'], summary: 'The process is alive', response: { 200: Health } }
  }, async () => ({ status: 'ok' }))

  app.get('/readyz', {
    schema: { tags: ['health'], summary: 'The service takes work', response: { 200: Health, 503: Health } }
  }, async (_req, reply) => {
    if (services.draining) return reply.code(503).send({ status: 'draining' })
    if (!(await services.store.ready().catch(() => false))) return reply.code(503).send({ status: 'store_unavailable' })
    return { status: 'ready' }
  })

  app.get('/metrics', {
    schema: { tags: ['operations'], summary: 'Prometheus metrics', produces: ['text/plain'], response: { 200: Type.String() } }
  }, async (_req, reply) => {
    const { registry } = services.telemetry.metrics
    const text = await registry.metrics()
    return reply.type(registry.contentType).send(text)
  })
}
