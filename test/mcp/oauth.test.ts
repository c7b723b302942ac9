import { generateKeyPairSync } from 'node:crypto'
import t from 'tap'
import { buildTestApp, runBatch } from '../helper.js'
import { FakeClock } from '../clock.js'
import { startOAuthServer } from './oauth-server.js'

/**
 * OAuth 2.1 client credentials for Streamable HTTP servers (SPEC section 18):
 * a real authorization server and protected MCP server on port 0
 * (oauth-server.ts), toolgate's own discovery, token requests, renewal and
 * redaction.
 */
const SECRET = 'sEcReT-value-4711'
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
const rsaPem = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
const ecPem = ec.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string

t.test('client_secret_basic: the token endpoint is discovered from the 401 challenge, and calls carry the token', async (t) => {
  const as = await startOAuthServer({ clientId: 'toolgate', secret: SECRET })
  t.teardown(() => as.close())
  const { app, logs } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url: as.url, trust: 'trusted', oauth: { clientId: 'toolgate', clientSecret: SECRET, scope: 'tools:call' } }])
  t.equal(app.services.mcp.view('p')?.state, 'ready', app.services.mcp.view('p')?.lastError ?? '')
  const res = await runBatch(app, [{ id: 'c1', name: 'p_echo', arguments: { text: 'hi' } }])
  t.equal(res.body.results[0].status, 'ok', JSON.stringify(res.body.results[0]))
  t.match(res.body.results[0].content, /echo: hi/)
  t.same(as.seen.slice(0, 4), ['POST /mcp 401', 'GET /meta/prm', 'GET /.well-known/oauth-authorization-server', 'POST /token'], "the 401's resource_metadata was followed, then RFC 8414 metadata")
  t.equal(as.tokenRequests.length, 1, 'one token for every request since')
  const form = as.tokenRequests[0]!.form
  t.same(form, { grant_type: 'client_credentials', scope: 'tools:call', resource: as.url }, 'the grant, the scope and the resource (RFC 8707); no secret in the form')
  t.match(as.tokenRequests[0]!.authorization, /^Basic /)
  const all = logs.join('\n')
  t.notOk(all.includes(SECRET), 'the secret is never logged')
  t.notOk(all.includes(as.issued[0]!), 'the token is never logged')
  const view = await app.inject({ method: 'GET', url: '/v1/mcp-servers/p' })
  t.same(view.json().oauth, { clientId: 'toolgate', method: 'client_secret_basic', scope: 'tools:call' }, 'the view says how, never the secret')
  t.notOk(view.body.includes(SECRET))
  const list = await app.inject({ method: 'GET', url: '/v1/mcp-servers' })
  t.notOk(list.body.includes(SECRET))
})

t.test('without a resource_metadata in the challenge, the protected-resource metadata is found at its well-known URI', async (t) => {
  const as = await startOAuthServer({ clientId: 'toolgate', secret: SECRET, wellKnownOnly: true })
  t.teardown(() => as.close())
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url: as.url, trust: 'trusted', oauth: { clientId: 'toolgate', clientSecret: SECRET } }])
  t.equal(app.services.mcp.view('p')?.state, 'ready', app.services.mcp.view('p')?.lastError ?? '')
  t.same(as.seen.slice(0, 3), ['POST /mcp 401', 'GET /.well-known/oauth-protected-resource/mcp', 'GET /.well-known/oauth-authorization-server'])
})

for (const [alg, pem, publicKey] of [['RS256', rsaPem, rsa.publicKey], ['ES256', ecPem, ec.publicKey]] as const) {
  t.test(`private_key_jwt ${alg}: a signed assertion whose aud is the issuer, iss and sub the client`, async (t) => {
    const as = await startOAuthServer({ clientId: 'toolgate', publicKey })
    t.teardown(() => as.close())
    const { app, logs } = await buildTestApp(t)
    await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url: as.url, trust: 'trusted', oauth: { clientId: 'toolgate', privateKeyJwt: { privateKey: pem, alg, kid: 'k1' } } }])
    t.equal(app.services.mcp.view('p')?.state, 'ready', app.services.mcp.view('p')?.lastError ?? '')
    const req = as.tokenRequests[0]!
    t.equal(req.verified, true, 'the signature verifies with the public key')
    t.same(req.header, { alg, typ: 'JWT', kid: 'k1' })
    t.match(req.claims, { iss: 'toolgate', sub: 'toolgate', aud: as.base })
    t.equal(req.form.client_assertion_type, 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer')
    t.equal(req.authorization, undefined, 'no Basic header')
    const res = await runBatch(app, [{ id: 'c1', name: 'p_echo', arguments: { text: 'jwt' } }])
    t.equal(res.body.results[0].status, 'ok')
    const all = logs.join('\n')
    t.notOk(all.includes('PRIVATE KEY'), 'the key is never logged')
    t.notOk(all.includes(req.form.client_assertion!), 'the assertion is never logged')
    const view = await app.inject({ method: 'GET', url: '/v1/mcp-servers/p' })
    t.same(view.json().oauth, { clientId: 'toolgate', method: 'private_key_jwt' })
    t.notOk(view.body.includes('PRIVATE KEY'))
  })
}

t.test('a token the server no longer accepts is renewed on its 401 and the request sent once more', async (t) => {
  const as = await startOAuthServer({ clientId: 'toolgate', secret: SECRET })
  t.teardown(() => as.close())
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url: as.url, trust: 'trusted', oauth: { clientId: 'toolgate', clientSecret: SECRET } }])
  as.revokeAll()
  const res = await runBatch(app, [{ id: 'c1', name: 'p_echo', arguments: { text: 'again' } }])
  t.equal(res.body.results[0].status, 'ok', JSON.stringify(res.body.results[0]))
  t.equal(as.tokenRequests.length, 2, 'a second token')
  t.equal(as.seen.filter((s) => s === 'GET /meta/prm').length, 1, 'the metadata is not read again')
})

t.test('a token is renewed before it expires, without a 401', async (t) => {
  const as = await startOAuthServer({ clientId: 'toolgate', secret: SECRET, expiresIn: 120 })
  t.teardown(() => as.close())
  const clock = new FakeClock()
  const { app } = await buildTestApp(t, { clock })
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url: as.url, trust: 'trusted', oauth: { clientId: 'toolgate', clientSecret: SECRET } }])
  const first = await runBatch(app, [{ id: 'c1', name: 'p_echo', arguments: { text: '1' } }])
  t.equal(first.body.results[0].status, 'ok')
  t.equal(as.tokenRequests.length, 1)
  const unauthorized = as.seen.filter((s) => s.endsWith('401')).length
  clock.advance(110_000)
  const second = await runBatch(app, [{ id: 'c2', name: 'p_echo', arguments: { text: '2' } }])
  t.equal(second.body.results[0].status, 'ok')
  t.equal(as.tokenRequests.length, 2, 'renewed within the last tenth of its lifetime')
  t.equal(as.seen.filter((s) => s.endsWith('401')).length, unauthorized, 'no request was refused for it')
})

t.test('a configured tokenUrl is used without discovery; the secret may come from an MCP_SECRET_ environment variable', async (t) => {
  const as = await startOAuthServer({ clientId: 'toolgate', secret: SECRET })
  t.teardown(() => as.close())
  const { app } = await buildTestApp(t, { env: { MCP_SECRET_P: SECRET } })
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url: as.url, trust: 'trusted', oauth: { clientId: 'toolgate', clientSecretEnv: 'MCP_SECRET_P', tokenUrl: `${as.base}/token`, resource: 'https://mcp.example.com/' } }])
  t.equal(app.services.mcp.view('p')?.state, 'ready', app.services.mcp.view('p')?.lastError ?? '')
  t.equal(as.seen[0], 'POST /token', 'the token first')
  t.notOk(as.seen.some((s) => s.startsWith('GET /.well-known') || s.startsWith('GET /meta')), 'no metadata read')
  t.equal(as.tokenRequests[0]!.form.resource, 'https://mcp.example.com/')
  const view = await app.inject({ method: 'GET', url: '/v1/mcp-servers/p' })
  t.equal(view.json().oauth.secretFrom, 'MCP_SECRET_P')
})

t.test('a refused token request leaves the server down with the reason in toolgate words, never the secret or the server text', async (t) => {
  const as = await startOAuthServer({ clientId: 'toolgate', secret: 'another' })
  t.teardown(() => as.close())
  const { app, logs } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url: as.url, oauth: { clientId: 'toolgate', clientSecret: SECRET }, tools: { echo: {} } }])
  const view = app.services.mcp.view('p')!
  t.equal(view.state, 'down')
  t.equal(view.lastError, 'connecting failed: OAuth: the token request was refused: HTTP 401 invalid_client')
  const all = logs.join('\n')
  t.notOk(all.includes(SECRET))
  t.notOk(all.includes('hunter2'), "the authorization server's text is not passed on")
})

t.test('invalid oauth settings are 400 invalid_mcp_server naming each problem', async (t) => {
  const { app } = await buildTestApp(t, { env: {} })
  const put = (oauth: unknown, extra: Record<string, unknown> = {}): Promise<{ statusCode: number, json: () => any }> =>
    app.inject({ method: 'PUT', url: '/v1/mcp-servers/p', payload: { transport: 'streamableHttp', url: 'http://127.0.0.1:1/mcp', oauth, ...extra } })
  const cases: Array<[string, unknown, RegExp, Record<string, unknown>?]> = [
    ['no secret', { clientId: 'c' }, /\/oauth: needs exactly one of clientSecret, clientSecretEnv and privateKeyJwt/],
    ['two secrets', { clientId: 'c', clientSecret: 's', privateKeyJwt: { privateKey: ecPem, alg: 'ES256' } }, /needs exactly one/],
    ['an unset variable', { clientId: 'c', clientSecretEnv: 'MCP_SECRET_NOPE' }, /\/oauth\/clientSecretEnv: the environment variable MCP_SECRET_NOPE is not set/],
    ['a variable outside MCP_SECRET_', { clientId: 'c', clientSecretEnv: 'AWS_SECRET_ACCESS_KEY' }, /\/oauth\/clientSecretEnv/],
    ['a key that is no PEM', { clientId: 'c', privateKeyJwt: { privateKey: 'nope', alg: 'RS256' } }, /\/oauth\/privateKeyJwt\/privateKey: not a PEM private key/],
    ['an EC key for RS256', { clientId: 'c', privateKeyJwt: { privateKey: ecPem, alg: 'RS256' } }, /RS256 needs an RSA key, not ec/],
    ['an RSA key for ES256', { clientId: 'c', privateKeyJwt: { privateKey: rsaPem, alg: 'ES256' } }, /ES256 needs an EC key on P-256/],
    ['an unknown algorithm', { clientId: 'c', privateKeyJwt: { privateKey: rsaPem, alg: 'HS256' } }, /\/oauth\/privateKeyJwt\/alg/],
    ['a token URL that is not http', { clientId: 'c', clientSecret: 's', tokenUrl: 'ftp://x/token' }, /\/oauth\/tokenUrl: must be http or https/],
    ['a resource with a fragment', { clientId: 'c', clientSecret: 's', resource: 'https://x/mcp#a' }, /\/oauth\/resource: must not have a fragment/],
    ['an unknown field', { clientId: 'c', clientSecret: 's', password: 'x' }, /\/oauth/],
    ['an authorization header beside it', { clientId: 'c', clientSecret: 's' }, /\/headers\/authorization: not with oauth/, { headers: { Authorization: 'Bearer x' } }]
  ]
  for (const [what, oauth, problem, extra] of cases) {
    const res = await put(oauth, extra)
    t.equal(res.statusCode, 400, what)
    t.equal(res.json().code, 'invalid_mcp_server', what)
    // A schema violation is named in `detail` (the route's check), the others each in `problems`.
    t.match(res.json().problems?.join('\n') ?? res.json().detail, problem, what)
    t.notOk(JSON.stringify(res.json()).includes('PRIVATE KEY'), `${what}: the key is not echoed`)
  }
})

t.test("docs/mcp.md's OAuth examples are valid server definitions", async (t) => {
  const { readFile } = await import('node:fs/promises')
  const { parse } = await import('yaml')
  const page = await readFile(new URL('../../docs/mcp.md', import.meta.url), 'utf8')
  const section = page.slice(page.indexOf('## OAuth client credentials'))
  const block = /```yaml\n([\s\S]*?)```/.exec(section)![1]!
  const { mcpServers } = parse(block) as { mcpServers: unknown[] }
  const { app } = await buildTestApp(t, { env: { MCP_SECRET_SEARCH: 's', MCP_SECRET_CRM_KEY: ecPem, MCP_SECRET_BILLING: 'b' } })
  t.equal(mcpServers.length, 3)
  for (const def of mcpServers) t.doesNotThrow(() => app.services.mcp.validate(def), JSON.stringify(def))
})
