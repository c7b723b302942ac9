import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type ErrorCode, ProblemError, problemBody } from '../errors.js'
import { StoreUnavailableError } from '../store/types.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The problem code a body that fails the route's schema gets (default invalid_request). */
    validationCode?: ErrorCode
  }
}

/** Seconds a client is told to wait before sending again after a 503 (shedding, draining, a store outage). */
export const RETRY_AFTER_SECONDS = 1

export function sendProblem (reply: FastifyReply, code: ErrorCode, detail?: string, extra?: Record<string, unknown>): FastifyReply {
  const body = problemBody(code, detail, extra, reply.request.url)
  if (body.status === 503) reply.header('retry-after', String(RETRY_AFTER_SECONDS))
  return reply.code(body.status).type('application/problem+json').send(body)
}

/** Maps fastify's own errors (validation, body size, parsing) to the catalogue. */
function toProblem (err: FastifyError, request: FastifyRequest): ProblemError {
  if (err instanceof ProblemError) return err
  if (err.validation !== undefined) {
    const code = request.routeOptions.config.validationCode ?? 'invalid_request'
    const where = err.validationContext ?? 'body'
    const list = err.validation.slice(0, 5).map((v) => {
      const extra = v.keyword === 'additionalProperties' ? `: ${JSON.stringify((v.params as { additionalProperty?: string }).additionalProperty)}` : ''
      return `${where}${v.instancePath || ''} ${v.message ?? 'is invalid'}${extra}`
    })
    return new ProblemError(code, list.join('; '))
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return new ProblemError('payload_too_large', 'The request body is over the size limit.')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return new ProblemError('unsupported_media_type', 'Send the body as application/json.')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY': return new ProblemError('invalid_request', 'The request body is empty; send a JSON object.')
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH': return new ProblemError('invalid_request', 'The Content-Length header does not match the body.')
  }
  if (err instanceof StoreUnavailableError) return new ProblemError('overloaded', 'The run store is unreachable; retry shortly.')
  const status = err.statusCode ?? 500
  if (status === 413) return new ProblemError('payload_too_large')
  if (status === 429) return new ProblemError('rate_limited', 'Too many requests; slow down.')
  if (status === 503) return new ProblemError('overloaded')
  if (status >= 400 && status < 500) return new ProblemError('invalid_request', err.message)
  return new ProblemError('internal_error', 'Something went wrong inside toolgate.')
}

export function registerProblems (app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const problem = toProblem(err, request)
    if (problem.status >= 500) request.log.error({ err }, 'request failed')
    else request.log.info({ code: problem.code }, 'request refused')
    return sendProblem(reply, problem.code, problem.message, problem.extra)
  })
  // Every route's path as a pattern, so a path known under other methods answers 405 with Allow, not 404.
  const routes: Array<{ pattern: RegExp, methods: string[] }> = []
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String)
    const source = route.url.split('/').map((part) => part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('/')
    routes.push({ pattern: new RegExp(`^${source}$`), methods })
  })
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods))].sort()
    // A route that takes this method and found nothing (a static file that is not there) is a 404, not a 405.
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      reply.header('allow', allowed.join(', '))
      return sendProblem(reply, 'method_not_allowed', `${path} takes ${allowed.join(', ')}, not ${request.method}`)
    }
    return sendProblem(reply, 'not_found', `No route ${request.method} ${path}`)
  })
}
