import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { KeyRing, Principal, Role } from '../auth/keys.js'
import { ProblemError } from '../errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Roles that may call the route (any of them); unset means no key needed. */
    roles?: readonly Role[]
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}

/** Resolves the caller's key on every request and enforces the route's roles. */
export function registerAuth (app: FastifyInstance, keys: KeyRing, metricsAuth: boolean): void {
  app.decorateRequest('principal', null)
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    let roles = request.routeOptions.config.roles
    if (request.routeOptions.url === '/metrics' && metricsAuth) roles = ['operator']
    if (roles === undefined) {
      done()
      return
    }
    const { authorization } = request.headers
    const principal = keys.authenticate(authorization)
    if (principal === null) {
      // RFC 6750 section 3: say which scheme, and whether a presented key was refused.
      reply.header('www-authenticate', authorization === undefined ? 'Bearer realm="toolgate"' : 'Bearer realm="toolgate", error="invalid_token"')
      done(new ProblemError('unauthorized', 'Send a valid API key as "Authorization: Bearer <key>".'))
      return
    }
    if (!roles.some((r) => principal.roles.has(r))) {
      done(new ProblemError('forbidden', `This route needs the ${roles.join(' or ')} role.`))
      return
    }
    request.principal = principal
    done()
  })
}

/** The authenticated caller; routes with roles always have one. */
export function principalOf (request: FastifyRequest): Principal {
  if (request.principal === null) throw new ProblemError('unauthorized')
  return request.principal
}
