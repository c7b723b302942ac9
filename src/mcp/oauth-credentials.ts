import { type KeyObject, createPrivateKey, randomUUID, sign } from 'node:crypto'
import type { McpOAuth } from '../../schemas/mcp-server.js'

/** How toolgate authenticates to the authorization server's token endpoint. */
export type ClientAuthMethod = 'client_secret_basic' | 'private_key_jwt'

/**
 * A server's `oauth` settings with its secret read (from the definition or
 * the environment variable it names) and its private key parsed: what the
 * token requests need. Never shown, never logged.
 */
export interface OAuthCredentials {
  clientId: string
  method: ClientAuthMethod
  /** client_secret_basic's secret. */
  secret?: string
  /** private_key_jwt's key, algorithm and key id. */
  key?: KeyObject
  alg?: 'RS256' | 'ES256'
  kid?: string
  tokenUrl?: string
  issuer?: string
  scope?: string
  resource?: string
}

/** Where secrets named by `*Env` fields are read: toolgate's environment, read once at start (services.ts). */
export type SecretEnvironment = Readonly<Record<string, string | undefined>>

/** How long a signed client assertion is valid. */
const ASSERTION_LIFETIME_S = 300

/**
 * The problems of a server's `oauth` settings beyond its schema, each as
 * `/oauth/...: what is wrong`: which secret is given, whether the variable
 * it names is set, whether the key parses and fits its algorithm, whether
 * the URLs are http(s) URLs without credentials.
 */
export function oauthProblems (oauth: McpOAuth, env: SecretEnvironment): string[] {
  const problems: string[] = []
  const given = [oauth.clientSecret, oauth.clientSecretEnv, oauth.privateKeyJwt].filter((v) => v !== undefined).length
  if (given !== 1) problems.push('/oauth: needs exactly one of clientSecret, clientSecretEnv and privateKeyJwt')
  if (oauth.clientSecretEnv !== undefined && (env[oauth.clientSecretEnv] ?? '') === '') problems.push(`/oauth/clientSecretEnv: the environment variable ${oauth.clientSecretEnv} is not set`)
  const jwt = oauth.privateKeyJwt
  if (jwt !== undefined) {
    if ((jwt.privateKey === undefined) === (jwt.privateKeyEnv === undefined)) {
      problems.push('/oauth/privateKeyJwt: needs exactly one of privateKey and privateKeyEnv')
    } else {
      const where = jwt.privateKey !== undefined ? '/oauth/privateKeyJwt/privateKey' : '/oauth/privateKeyJwt/privateKeyEnv'
      const pem = jwt.privateKey ?? env[jwt.privateKeyEnv!]
      if (pem === undefined || pem === '') problems.push(`${where}: the environment variable ${jwt.privateKeyEnv!} is not set`)
      else {
        const problem = keyProblem(pem, jwt.alg)
        if (problem !== null) problems.push(`${where}: ${problem}`)
      }
    }
  }
  for (const field of ['tokenUrl', 'issuer', 'resource'] as const) {
    const value = oauth[field]
    if (value === undefined) continue
    const problem = urlProblem(value)
    if (problem !== null) problems.push(`/oauth/${field}: ${problem}`)
    else if (field === 'resource' && new URL(value).hash !== '') problems.push('/oauth/resource: must not have a fragment (RFC 8707)')
  }
  return problems
}

/** The credentials of settings that passed oauthProblems. */
export function oauthCredentials (oauth: McpOAuth, env: SecretEnvironment): OAuthCredentials {
  const creds: OAuthCredentials = { clientId: oauth.clientId, method: oauth.privateKeyJwt === undefined ? 'client_secret_basic' : 'private_key_jwt' }
  if (oauth.privateKeyJwt !== undefined) {
    const jwt = oauth.privateKeyJwt
    creds.key = createPrivateKey(jwt.privateKey ?? env[jwt.privateKeyEnv!]!)
    creds.alg = jwt.alg
    if (jwt.kid !== undefined) creds.kid = jwt.kid
  } else {
    creds.secret = oauth.clientSecret ?? env[oauth.clientSecretEnv!]!
  }
  if (oauth.tokenUrl !== undefined) creds.tokenUrl = oauth.tokenUrl
  if (oauth.issuer !== undefined) creds.issuer = oauth.issuer
  if (oauth.scope !== undefined) creds.scope = oauth.scope
  if (oauth.resource !== undefined) creds.resource = oauth.resource
  return creds
}

/** The settings as a server's view shows them: how the token is got, never the secret or the key. */
export function oauthView (oauth: McpOAuth): Record<string, string> {
  const view: Record<string, string> = { clientId: oauth.clientId, method: oauth.privateKeyJwt === undefined ? 'client_secret_basic' : 'private_key_jwt' }
  if (oauth.tokenUrl !== undefined) view.tokenUrl = oauth.tokenUrl
  if (oauth.issuer !== undefined) view.issuer = oauth.issuer
  if (oauth.scope !== undefined) view.scope = oauth.scope
  if (oauth.resource !== undefined) view.resource = oauth.resource
  const from = oauth.clientSecretEnv ?? oauth.privateKeyJwt?.privateKeyEnv
  if (from !== undefined) view.secretFrom = from
  return view
}

/**
 * The client's authentication of one token request, added to its headers
 * and form: HTTP Basic with the form-encoded id and secret (RFC 6749
 * section 2.3.1), or a JWT assertion signed with node:crypto (RFC 7523
 * section 2.2) whose `aud` is the authorization server's issuer.
 */
export function authenticate (creds: OAuthCredentials, audience: string, headers: Headers, form: URLSearchParams, nowMs: number): void {
  if (creds.method === 'client_secret_basic') {
    headers.set('authorization', `Basic ${Buffer.from(`${formEncode(creds.clientId)}:${formEncode(creds.secret!)}`).toString('base64')}`)
    return
  }
  form.set('client_id', creds.clientId)
  form.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer')
  form.set('client_assertion', clientAssertion(creds, audience, nowMs))
}

/** A signed JWT: iss and sub the client id, aud the authorization server, valid ASSERTION_LIFETIME_S, a fresh jti. */
export function clientAssertion (creds: OAuthCredentials, audience: string, nowMs: number): string {
  const iat = Math.floor(nowMs / 1000)
  const header = { alg: creds.alg!, typ: 'JWT', ...(creds.kid === undefined ? {} : { kid: creds.kid }) }
  const claims = { iss: creds.clientId, sub: creds.clientId, aud: audience, iat, exp: iat + ASSERTION_LIFETIME_S, jti: randomUUID() }
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`
  // ES256 signatures are r||s (JOSE), not DER.
  const signature = sign('sha256', Buffer.from(input), creds.alg === 'ES256' ? { key: creds.key!, dsaEncoding: 'ieee-p1363' } : creds.key!)
  return `${input}.${signature.toString('base64url')}`
}

function keyProblem (pem: string, alg: 'RS256' | 'ES256'): string | null {
  let key: KeyObject
  try {
    key = createPrivateKey(pem)
  } catch {
    return 'not a PEM private key'
  }
  if (alg === 'RS256' && key.asymmetricKeyType !== 'rsa') return `RS256 needs an RSA key, not ${key.asymmetricKeyType ?? 'this one'}`
  if (alg === 'ES256' && (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')) return 'ES256 needs an EC key on P-256'
  return null
}

function urlProblem (value: string): string | null {
  let url: URL
  try { url = new URL(value) } catch { return 'not a valid URL' }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be http or https'
  if (url.username !== '' || url.password !== '') return 'must not carry credentials'
  return null
}

function formEncode (value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+')
}

function base64url (text: string): string {
  return Buffer.from(text).toString('base64url')
}
