import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type ErrorCode, ProblemError, problemBody } from '../errors.js'
import { StoreUnavailableError } from '../store/types.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The problem code a body that fails the route's schema gets (default invalid_request). */
    validationCode?: ErrorCode
  }
}

export function sendProblem (reply: FastifyReply, code: ErrorCode, detail?: string, extra?: Record<string, unknown>): FastifyReply {
  const body = problemBody(code, detail, extra, reply.request.url)
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
  app.setNotFoundHandler((request, reply) => sendProblem(reply, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}`))
}
