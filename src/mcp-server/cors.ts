/**
 * CORS for toolgate's own MCP endpoint (SPEC section 16): a browser-based
 * MCP client (an inspector, an agent in a web page) on an origin the
 * DNS-rebinding rule lets through (a loopback origin, or one listed in
 * `TOOLGATE_MCP_ALLOWED_ORIGINS`) may call the endpoint and read its
 * answers; any other origin keeps its 403 and gets no CORS header. Keys
 * travel in the Authorization header, never in cookies: the allowed origin
 * is echoed (never `*`) and credentials mode is not offered. Pure: headers
 * and settings in, headers out.
 */
import { type OriginPolicy, refusedOrigin } from './origin.js'

/** The methods of the transport. */
const ALLOW_METHODS = 'GET, POST, DELETE'
/** What an MCP client sends beside the simple headers: its key, the transport's headers, and toolgate's request id. */
const ALLOW_HEADERS = 'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, X-Request-Id'
/** What a page must read of an answer: its session, its run, why a key was refused, when to come back, the request id. */
const EXPOSE_HEADERS = 'Mcp-Session-Id, Toolgate-Run-Id, WWW-Authenticate, Retry-After, X-Request-Id'
/** How long a browser may keep a preflight's answer: a change of the allowed origins reaches pages within this. */
export const PREFLIGHT_MAX_AGE_SECONDS = 600

/** The CORS headers of an answer to a request without an allowed origin (most requests: they come from no browser). */
const VARY_ONLY: Readonly<Record<string, string>> = Object.freeze({ vary: 'Origin' })

/** The headers the answer to a request from a browser depends on. */
export interface CorsRequest {
  origin?: string | undefined
  host?: string | undefined
}

/**
 * The CORS headers of an answer: the request's `Origin`, echoed, and the
 * headers a page may read, when that origin may use the endpoint; only
 * `Vary: Origin` otherwise (the answer depends on the Origin either way).
 */
export function corsHeaders (request: CorsRequest, policy: OriginPolicy): Readonly<Record<string, string>> {
  const { origin } = request
  if (origin === undefined || origin === '' || refusedOrigin(request, policy) !== null) return VARY_ONLY
  return { vary: 'Origin', 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSE_HEADERS }
}

/** What a preflight's 204 says beside `corsHeaders`: the methods and headers a page may send, and for how long that holds. */
export const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  allow: `${ALLOW_METHODS}, OPTIONS`,
  'access-control-allow-methods': ALLOW_METHODS,
  'access-control-allow-headers': ALLOW_HEADERS,
  'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS)
})
