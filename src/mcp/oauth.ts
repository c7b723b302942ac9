import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { type Clock, systemClock } from '../clock.js'
import { type OAuthCredentials, authenticate } from './oauth-credentials.js'

/**
 * No access token could be got: the MCP request it was for was not sent
 * (or was refused, 401, before the server processed it). Its message is
 * toolgate's own words: never a secret, a token, or the server's text.
 */
export class OAuthError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'OAuthError'
  }
}

export interface OAuthTokensOptions {
  clock?: Clock
  /** How long one metadata or token request may take. @default 10000 */
  timeoutMs?: number
  /** The fetch of metadata and token requests (not bounded by the MCP answer limit). @default fetch */
  fetch?: FetchLike
}

/** The longest metadata or token answer read. */
const MAX_METADATA_BYTES = 64 * 1024
/** A token is renewed this long before it expires, or a tenth of its lifetime when that is shorter. */
const RENEW_BEFORE_MS = 60_000
/** An `error` code of an authorization server's answer, quoted in lastError only when it looks like one. */
const ERROR_CODE = /^[a-z_]{1,64}$/

interface Token { value: string, expiresAt: number | null, renewAt: number | null }
/** Where tokens come from: the token endpoint, and the issuer a JWT assertion is addressed to. */
interface Endpoint { tokenUrl: string, audience: string, resource: string, scope: string | undefined, metadataUrl: string | null }

/**
 * The access token of one Streamable HTTP server (SPEC §18): got with the
 * OAuth 2.1 client-credentials grant, cached, renewed before it expires and
 * when the server answers 401 (once per request), sent as a bearer token.
 * Without `tokenUrl`, the token endpoint is discovered as an MCP client does:
 * the protected-resource metadata (RFC 9728: the `resource_metadata` of the
 * server's 401 challenge, else its well-known URIs), then the authorization
 * server's metadata (RFC 8414, then OpenID Connect discovery).
 */
export class OAuthTokens {
  readonly #creds: OAuthCredentials
  readonly #server: URL
  readonly #clock: Clock
  readonly #timeoutMs: number
  readonly #fetch: FetchLike
  #endpoint: Endpoint | null = null
  #token: Token | null = null
  #pending: Promise<Token> | null = null

  constructor (creds: OAuthCredentials, serverUrl: string, opts: OAuthTokensOptions = {}) {
    this.#creds = creds
    this.#server = new URL(serverUrl)
    this.#clock = opts.clock ?? systemClock
    this.#timeoutMs = opts.timeoutMs ?? 10_000
    this.#fetch = opts.fetch ?? fetch
    if (creds.tokenUrl !== undefined) {
      this.#endpoint = { tokenUrl: creds.tokenUrl, audience: creds.issuer ?? creds.tokenUrl, resource: creds.resource ?? canonical(this.#server), scope: creds.scope, metadataUrl: null }
    }
  }

  /** A fetch that sends the token with each request to the server and renews it on a 401 (one retry). */
  wrap (inner: FetchLike): FetchLike {
    return async (url, init) => {
      const sent = await this.#current()
      const res = await inner(url, withBearer(init, sent))
      if (res.status !== 401) return res
      const challenge = res.headers.get('www-authenticate')
      await res.body?.cancel().catch(() => {})
      const fresh = await this.#renew(sent, challenge)
      return await inner(url, withBearer(init, fresh))
    }
  }

  /** The token to send: the cached one while fresh, else a new one; none while the token endpoint is unknown (the server's 401 tells where to look). */
  async #current (): Promise<string | null> {
    const token = this.#token
    if (token !== null && (token.renewAt === null || this.#clock.now() < token.renewAt)) return token.value
    if (this.#endpoint === null) return null
    return (await this.#obtain()).value
  }

  /** After a 401 to a request sent with `sent`: the token another request got meanwhile, else a new one (discovering where first, when it must). */
  async #renew (sent: string | null, challenge: string | null): Promise<string> {
    const token = this.#token
    if (token !== null && token.value !== sent && (token.renewAt === null || this.#clock.now() < token.renewAt)) return token.value
    this.#token = null
    const hint = challengeParam(challenge, 'resource_metadata')
    if (this.#creds.tokenUrl === undefined && (this.#endpoint === null || (hint !== null && hint !== this.#endpoint.metadataUrl))) {
      this.#endpoint = await this.#discover(hint, challengeParam(challenge, 'scope'))
    }
    return (await this.#obtain()).value
  }

  /** One token request at a time: concurrent requests share it. */
  #obtain (): Promise<Token> {
    this.#pending ??= this.#request().finally(() => { this.#pending = null })
    return this.#pending
  }

  async #request (): Promise<Token> {
    const endpoint = this.#endpoint!
    const now = this.#clock.now()
    const headers = new Headers({ 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' })
    const form = new URLSearchParams({ grant_type: 'client_credentials' })
    if (endpoint.scope !== undefined) form.set('scope', endpoint.scope)
    form.set('resource', endpoint.resource)
    authenticate(this.#creds, endpoint.audience, headers, form, now)
    const { status, body } = await this.#exchange(endpoint.tokenUrl, { method: 'POST', headers, body: form.toString() }, 'the token request')
    if (status !== 200) {
      const code = typeof (body as { error?: unknown } | null)?.error === 'string' && ERROR_CODE.test((body as { error: string }).error) ? ` ${(body as { error: string }).error}` : ''
      throw new OAuthError(`the token request was refused: HTTP ${status}${code}`)
    }
    const answer = body as { access_token?: unknown, token_type?: unknown, expires_in?: unknown } | null
    if (typeof answer?.access_token !== 'string' || answer.access_token === '' || (answer.token_type !== undefined && String(answer.token_type).toLowerCase() !== 'bearer')) {
      throw new OAuthError('the token endpoint answered no bearer access token')
    }
    const lifetimeMs = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in * 1000 : null
    const token: Token = {
      value: answer.access_token,
      expiresAt: lifetimeMs === null ? null : now + lifetimeMs,
      renewAt: lifetimeMs === null ? null : now + lifetimeMs - Math.min(RENEW_BEFORE_MS, lifetimeMs / 10)
    }
    this.#token = token
    return token
  }

  /** The token endpoint, from the protected-resource metadata and the authorization server's. */
  async #discover (hint: string | null, challengeScope: string | null): Promise<Endpoint> {
    const server = this.#server
    const path = server.pathname.replace(/\/$/, '')
    const prmUrls = hint !== null ? [hint] : [...(path === '' ? [] : [`${server.origin}/.well-known/oauth-protected-resource${path}`]), `${server.origin}/.well-known/oauth-protected-resource`]
    const found = await this.#firstMetadata(prmUrls, 'the protected-resource metadata')
    const prm = found.body as { resource?: unknown, authorization_servers?: unknown }
    if (typeof prm.resource !== 'string' || !resourceCovers(prm.resource, server)) throw new OAuthError('the protected-resource metadata names another resource than the server')
    const issuer = Array.isArray(prm.authorization_servers) && typeof prm.authorization_servers[0] === 'string' ? prm.authorization_servers[0] : null
    if (issuer === null || !secureUrl(issuer)) throw new OAuthError('the protected-resource metadata names no usable authorization server')
    if (this.#creds.issuer !== undefined && trimSlash(issuer) !== trimSlash(this.#creds.issuer)) throw new OAuthError('the server names another authorization server than the configured issuer')
    const as = new URL(issuer)
    const asPath = as.pathname.replace(/\/$/, '')
    const asUrls = asPath === ''
      ? [`${as.origin}/.well-known/oauth-authorization-server`, `${as.origin}/.well-known/openid-configuration`]
      : [`${as.origin}/.well-known/oauth-authorization-server${asPath}`, `${as.origin}/.well-known/openid-configuration${asPath}`, `${as.origin}${asPath}/.well-known/openid-configuration`]
    const meta = (await this.#firstMetadata(asUrls, "the authorization server's metadata")).body as { issuer?: unknown, token_endpoint?: unknown }
    if (typeof meta.issuer !== 'string' || trimSlash(meta.issuer) !== trimSlash(issuer)) throw new OAuthError("the authorization server's metadata names another issuer")
    if (typeof meta.token_endpoint !== 'string' || !secureUrl(meta.token_endpoint)) throw new OAuthError("the authorization server's metadata has no usable token_endpoint")
    return {
      tokenUrl: meta.token_endpoint,
      audience: meta.issuer,
      resource: this.#creds.resource ?? prm.resource,
      scope: this.#creds.scope ?? challengeScope ?? undefined,
      metadataUrl: hint
    }
  }

  async #firstMetadata (urls: readonly string[], what: string): Promise<{ body: unknown }> {
    let last = 0
    for (const url of urls) {
      const { status, body } = await this.#exchange(url, { method: 'GET', headers: { accept: 'application/json' } }, what)
      if (status === 200 && typeof body === 'object' && body !== null && !Array.isArray(body)) return { body }
      last = status
      // Only "not here" moves on to the next place to look.
      if (status !== 404 && status !== 200) break
    }
    throw new OAuthError(`${what} could not be read${last === 0 ? '' : `: HTTP ${last}`}`)
  }

  /** One request, redirects refused (a secret is never sent on), its JSON answer read up to MAX_METADATA_BYTES. */
  async #exchange (url: string, init: RequestInit, what: string): Promise<{ status: number, body: unknown }> {
    let res: Response
    try {
      res = await this.#fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(this.#timeoutMs) })
    } catch (err) {
      const code = (err as { cause?: { code?: unknown } }).cause?.code
      throw new OAuthError(`${what} failed${typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? `: ${code}` : ''}`)
    }
    const text = await readBounded(res)
    if (text === null) throw new OAuthError(`${what} answered more than ${MAX_METADATA_BYTES} bytes`)
    let body: unknown = null
    try { body = JSON.parse(text) } catch { body = null }
    if (res.status === 200 && body === null) throw new OAuthError(`${what} answered no JSON`)
    return { status: res.status, body }
  }
}

/** The request with the bearer token in place of any authorization header (none when there is no token yet). */
function withBearer (init: RequestInit | undefined, token: string | null): RequestInit | undefined {
  if (token === null) return init
  const headers = new Headers(init?.headers)
  headers.set('authorization', `Bearer ${token}`)
  return { ...init, headers }
}

/** A parameter of a `WWW-Authenticate: Bearer ...` challenge, or null. */
export function challengeParam (header: string | null, name: string): string | null {
  if (header === null) return null
  const match = new RegExp(`(?:^|[\\s,])${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^\\s,]+))`, 'i').exec(header)
  if (match === null) return null
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2]!
}

/** The server's URL as an RFC 8707 resource: without fragment. */
function canonical (url: URL): string {
  const u = new URL(url)
  u.hash = ''
  return u.href
}

/** Whether a protected resource covers the server's URL: the same origin, and a path that is a prefix of its path (RFC 9728 section 3.3). */
function resourceCovers (resource: string, server: URL): boolean {
  let r: URL
  try { r = new URL(resource) } catch { return false }
  if (r.origin !== server.origin) return false
  const base = r.pathname.endsWith('/') ? r.pathname : `${r.pathname}/`
  const path = server.pathname.endsWith('/') ? server.pathname : `${server.pathname}/`
  return path.startsWith(base)
}

/** An authorization server's URL toolgate sends credentials to: https, or http on a loopback host. */
function secureUrl (value: string): boolean {
  let url: URL
  try { url = new URL(value) } catch { return false }
  if (url.username !== '' || url.password !== '') return false
  if (url.protocol === 'https:') return true
  return url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
}

function trimSlash (url: string): string {
  return url.replace(/\/+$/, '')
}

async function readBounded (res: Response): Promise<string | null> {
  if (res.body === null) return ''
  const chunks: Uint8Array[] = []
  let read = 0
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    read += chunk.byteLength
    // Leaving the loop cancels the rest of the body.
    if (read > MAX_METADATA_BYTES) return null
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}
