import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import type { KeyRing, Principal, Role } from '../auth/keys.js'
import { ProblemError } from '../errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Roles that may call the route (any of them); unset means no key needed. */
    roles?: readonly Role[]
  }
  interface FastifyRequest {
    principal: Principal | null
    /** The matched route's URL pattern, once its first hook ran; null before, and for requests no route matched. */
    routeUrl: string | null
  }
}

type Done = (err?: Error) => void

/**
 * Resolves the caller's key and enforces the route's roles, in a hook each
 * route gets for itself (onRoute), first of its own hooks: the roles and the
 * URL are known when the route is added, so no request reads them back
 * (fastify's request.routeOptions makes a new object on every read).
 */
export function registerAuth (app: FastifyInstance, keys: KeyRing, metricsAuth: boolean): void {
  app.decorateRequest('principal', null)
  app.decorateRequest('routeUrl', null)
  app.addHook('onRoute', (route) => {
    const url = route.url ?? route.path
    const roles = url === '/metrics' && metricsAuth ? ['operator'] as const : route.config?.roles
    const hook = roles === undefined ? noteRoute(url) : authenticate(url, roles, keys)
    const own = route.onRequest
    route.onRequest = own === undefined ? [hook] : Array.isArray(own) ? [hook, ...own] : [hook, own]
  })
}

/** A callback hook, not an async one: it runs on every request and needs no promise. */
function noteRoute (url: string): onRequestHookHandler {
  return function noteRouteHook (request: FastifyRequest, _reply: FastifyReply, done: Done): void {
    request.routeUrl = url
    done()
  }
}

function authenticate (url: string, roles: readonly Role[], keys: KeyRing): onRequestHookHandler {
  return function authenticateHook (request: FastifyRequest, reply: FastifyReply, done: Done): void {
    request.routeUrl = url
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
  }
}

/** The authenticated caller; routes with roles always have one. */
export function principalOf (request: FastifyRequest): Principal {
  if (request.principal === null) throw new ProblemError('unauthorized')
  return request.principal
}
