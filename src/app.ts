import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Logger } from 'pino'
import type { Config } from './config.js'
import { registerAuth } from './http/auth.js'
import { registerJsonBody } from './http/json-body.js'
import { registerProblems } from './http/problems.js'
import { type ServiceOverrides, type Services, createServices } from './services.js'
import { createLogger } from './logger.js'
import { Problem } from '../schemas/common.js'
import { Run } from '../schemas/run.js'
import { ToolDefinition } from '../schemas/tool.js'
import { Receipt } from '../schemas/receipt.js'
import { BatchResponse } from '../schemas/batch.js'
import { Summary } from '../schemas/summary.js'
import { healthRoutes } from '../routes/health.js'
import { toolRoutes } from '../routes/tools.js'
import { runRoutes } from '../routes/runs.js'
import { batchRoutes } from '../routes/batches.js'
import { receiptRoutes } from '../routes/receipts.js'
import { registerOpenApi } from './http/openapi.js'

declare module 'fastify' {
  interface FastifyInstance {
    services: Services
  }
}

export interface AppOptions extends ServiceOverrides {
  logger?: Logger
}

/** Builds the service without listening: routes, hooks, services. Close it to free everything. */
export async function buildApp (config: Config, opts: AppOptions = {}): Promise<FastifyInstance> {
  const logger = opts.logger ?? createLogger(config.logLevel)
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One line per request is written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } }
  }).withTypeProvider<TypeBoxTypeProvider>()

  const services = createServices(config, logger, opts)
  app.decorate('services', services)
  for (const schema of [Problem, Run, ToolDefinition, Receipt, BatchResponse, Summary]) app.addSchema(schema)

  registerJsonBody(app)
  registerProblems(app)
  registerAuth(app, services.keys, config.metricsAuth)
  await registerOpenApi(app)
  app.addHook('onResponse', async (req, reply) => {
    req.log.info({ method: req.method, route: req.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100 }, 'request')
  })

  await app.register(healthRoutes, { services })
  await app.register(toolRoutes, { services })
  await app.register(runRoutes, { services })
  await app.register(batchRoutes, { services })
  await app.register(receiptRoutes, { services })

  app.addHook('onClose', async () => { await services.close() })
  return app
}
