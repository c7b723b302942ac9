/**
 * DNS-rebinding protection for toolgate's own MCP endpoint (SPEC section 16):
 * a browser page on another site must not reach an MCP server that listens
 * on the user's machine. Pure: headers and settings in, a refusal or null out.
 */

/** What the check needs to know of the service. */
export interface OriginPolicy {
  /** Origins allowed beside loopback ones (`TOOLGATE_MCP_ALLOWED_ORIGINS`), as `scheme://host[:port]`, lower case. */
  readonly allowedOrigins: ReadonlySet<string>
  /** toolgate listens on a loopback address: a Host header naming another host is refused. */
  readonly loopbackListen: boolean
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])
const LOOPBACK_ADDRESSES = new Set(['localhost', '127.0.0.1', '::1', '[::1]'])

/** Whether an address toolgate listens on is a loopback one (127.0.0.0/8, ::1, localhost). */
export function isLoopbackAddress (host: string): boolean {
  return LOOPBACK_ADDRESSES.has(host) || /^127(?:\.\d{1,3}){3}$/.test(host)
}

/** The host part of a Host header or an origin's authority, lower case, without the port. */
function hostOf (authority: string): string {
  const a = authority.trim().toLowerCase()
  if (a.startsWith('[')) {
    const end = a.indexOf(']')
    return end < 0 ? a : a.slice(0, end + 1)
  }
  const colon = a.indexOf(':')
  return colon < 0 ? a : a.slice(0, colon)
}

/** Whether an Origin header value is a loopback origin over http (any port). */
function isLoopbackOrigin (origin: string): boolean {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return false
  }
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname.toLowerCase()) && url.pathname === '/' && url.username === ''
}

/** Normalizes an origin for comparison: scheme://host[:port], lower case, the default port left out. */
export function normalizeOrigin (origin: string): string | null {
  try {
    const url = new URL(origin)
    return `${url.protocol}//${url.host}`.toLowerCase()
  } catch {
    return null
  }
}

/**
 * Why a request to the MCP endpoint is refused (403), or null when it may go
 * on: an `Origin` that is neither loopback nor allowed; on a loopback
 * listener, a `Host` that names another host.
 */
export function refusedOrigin (headers: { origin?: string | undefined, host?: string | undefined }, policy: OriginPolicy): string | null {
  const { origin, host } = headers
  if (origin !== undefined && origin !== '') {
    const normalized = normalizeOrigin(origin)
    if (!isLoopbackOrigin(origin) && (normalized === null || !policy.allowedOrigins.has(normalized))) {
      return 'Forbidden: the Origin header is not allowed (set TOOLGATE_MCP_ALLOWED_ORIGINS to allow it).'
    }
  }
  if (policy.loopbackListen && host !== undefined && !LOOPBACK_HOSTS.has(hostOf(host)) && !/^127(?:\.\d{1,3}){3}$/.test(hostOf(host))) {
    return 'Forbidden: toolgate listens on a loopback address and the Host header names another host.'
  }
  return null
}
