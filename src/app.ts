import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import underPressure from '@fastify/under-pressure'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Logger } from 'pino'
import type { Config } from './config.js'
import { registerAccessLog } from './http/access-log.js'
import { registerRequestId, requestIdOf } from './http/request-id.js'
import { registerAuth } from './http/auth.js'
import { RequestLogger } from './http/request-logger.js'
import { registerRateLimit } from './auth/rate-limit.js'
import { ProblemError } from './errors.js'
import { registerJsonBody } from './http/json-body.js'
import { useSharedCompilers } from './http/compilers.js'
import { registerProblems, sendProblem } from './http/problems.js'
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
import { openApiRoutes } from '../routes/openapi.js'
import { listingRoutes } from '../routes/listing.js'
import { findUiDir, uiRoutes } from '../routes/ui.js'
import { mcpServerRoutes } from '../routes/mcp-servers.js'
import { McpServerView } from '../schemas/mcp-server.js'
import { uncertainRoutes } from '../routes/uncertain.js'
import { approvalRoutes } from '../routes/approvals.js'
import { readiness, registerReadinessGauge, shedRequestsCounter } from './telemetry/health-metrics.js'
import { registerOpenApi } from './http/openapi.js'
import { registerServerSpans } from './telemetry/http-span.js'
import { activeTracer } from './telemetry/tracing.js'

declare module 'fastify' {
  interface FastifyInstance {
    services: Services
  }
}

export interface AppOptions extends ServiceOverrides {
  logger?: Logger
  /** How often load shedding samples the event loop. @default 1000 */
  pressureSampleIntervalMs?: number
}

/** Routes that answer however loaded the process is: probes and metrics must see the overload. */
const NEVER_SHED: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics', '/openapi.json'])
/** Longest path parameter routed; longer ones are refused as invalid requests. */
const MAX_PARAM_LENGTH = 512
/** Seconds a shed client is asked to wait (Retry-After). */
export const SHED_RETRY_AFTER_SECONDS = 5
/** Node checks request timeouts on this period at most (its default, 30 s, would let a 1 s timeout run to 31 s). */
const MAX_TIMEOUT_CHECK_MS = 1000

/** Node's headers timeout: TOOLGATE_HEADERS_TIMEOUT_MS, never past the request timeout (Node refuses that), 0 for the request timeout alone. */
function headersTimeout (config: Config): number {
  const { headersTimeoutMs: headers, requestTimeoutMs: request } = config
  if (headers === 0) return request
  return request === 0 ? headers : Math.min(headers, request)
}

/** Builds the service without listening: routes, hooks, services. Close it to free everything. */
export async function buildApp (config: Config, opts: AppOptions = {}): Promise<FastifyInstance> {
  const logger = opts.logger ?? createLogger(config.logLevel)
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One line per request is written by the access log (src/http/access-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    // request.log is made only when something logs through it.
    childLoggerFactory: (parent, bindings, options) => new RequestLogger(parent, bindings, options),
    // X-Request-Id when valid, else a UUID (src/http/request-id.ts); sent back on every answer.
    requestIdHeader: false,
    genReqId: requestIdOf,
    bodyLimit: config.bodyLimitBytes,
    // Slow clients: a request not received whole within this answers 408 and its socket closes.
    // Node only honours it when given to createServer (fastify sets it afterwards), hence `http`.
    requestTimeout: config.requestTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: headersTimeout(config),
      connectionsCheckingInterval: Math.max(10, Math.min(MAX_TIMEOUT_CHECK_MS, Math.floor(Math.min(...[config.requestTimeoutMs, config.headersTimeoutMs].filter((ms) => ms > 0)) / 4) || MAX_TIMEOUT_CHECK_MS))
    },
    return503OnClosing: true,
    // Ids may be 128 characters (SPEC); fastify's default of 100 would refuse the longest.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Errors found before routing (a path that is not valid UTF-8, a parameter too long) are problems too.
    frameworkErrors: (err, _request, reply) => {
      sendProblem(reply, 'invalid_request', err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path parameter is too long.' : 'The path is not valid (bad percent-encoding or UTF-8).')
    },
    forceCloseConnections: 'idle',
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } }
  }).withTypeProvider<TypeBoxTypeProvider>()

  const services = createServices(config, logger, opts)
  app.decorate('services', services)
  registerReadinessGauge(services.telemetry.metrics.registry, () => readiness(services))
  const shedRequests = shedRequestsCounter(services.telemetry.metrics.registry)
  const shared = [Problem, Run, ToolDefinition, Receipt, BatchResponse, Summary, McpServerView]
  for (const schema of shared) app.addSchema(schema)
  useSharedCompilers(app, shared)

  registerRequestId(app)
  // Before shedding, auth and the rate limit: a refused request is traced too. Tracing is
  // set up before the app (src/server.ts): without a tracer no request pays for three hooks.
  if (activeTracer() !== null) registerServerSpans(app)
  registerJsonBody(app)
  registerProblems(app)
  // Shedding comes first: an overloaded process should not even check keys.
  if (config.maxEventLoopDelayMs > 0) {
    await app.register(underPressure, {
      maxEventLoopDelay: config.maxEventLoopDelayMs,
      sampleInterval: opts.pressureSampleIntervalMs ?? 1000,
      pressureHandler: async (request, reply) => { await shed(request, reply, shedRequests) }
    })
  }
  registerAuth(app, services.keys, config.metricsAuth)
  // With the Redis store, every replica counts in the same Redis (src/auth/rate-limit.ts).
  if (config.rateLimitMax > 0) await registerRateLimit(app, { max: config.rateLimitMax, windowMs: config.rateLimitWindowMs, store: config.store, logger })
  await registerOpenApi(app, { metricsAuth: config.metricsAuth })
  registerAccessLog(app)

  await app.register(healthRoutes, { services })
  await app.register(toolRoutes, { services })
  await app.register(runRoutes, { services })
  await app.register(batchRoutes, { services })
  await app.register(receiptRoutes, { services })
  await app.register(openApiRoutes)
  await app.register(listingRoutes, { services })
  const uiDir = config.ui ? findUiDir() : undefined
  if (uiDir !== undefined) await app.register(uiRoutes, { dir: uiDir })
  else if (config.ui) logger.warn('The operator page is not served: its files (ui/ beside dist/) are missing')
  await app.register(mcpServerRoutes, { services })
  await app.register(uncertainRoutes, { services })
  await app.register(approvalRoutes, { services })

  app.addHook('onClose', async () => { await services.close() })
  return app
}

/** under-pressure's handler: a 503 overloaded problem, except for the routes that must always answer. */
async function shed (request: FastifyRequest, reply: FastifyReply, counted: { inc: () => void }): Promise<void> {
  if (request.routeOptions.url !== undefined && NEVER_SHED.has(request.routeOptions.url)) return
  counted.inc()
  reply.header('retry-after', String(SHED_RETRY_AFTER_SECONDS))
  throw new ProblemError('overloaded', 'The service is overloaded; retry later.')
}
