import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { KeyRing, KeysFileError, sha256Hex } from '../../src/auth/keys.js'
import { buildTestApp, get, startExecutor, tool } from '../helper.js'

const ORCH = 'orchestrator-key-0123456789'
const ADMIN = 'admin-key-0123456789abcdef'
const OPS = 'operator-key-0123456789abc'
const ALL = 'all-roles-key-0123456789ab'

const keysDoc = {
  keys: [
    { key: ORCH, tenant: 'acme', roles: ['orchestrator'], scopes: ['world:write'] },
    // Stored as a digest only: the file never holds these keys.
    { sha256: sha256Hex(ADMIN), tenant: 'ops', roles: ['admin'] },
    { sha256: sha256Hex(OPS).toUpperCase(), tenant: 'ops', roles: ['operator'] },
    { key: ALL, tenant: 'acme', roles: ['orchestrator', 'admin', 'operator'] }
  ]
}

const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` })

type Role = 'orchestrator' | 'admin' | 'operator'
interface Route { method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown, role: Role | null, opened?: number, also?: Role[] }

/** Every route, with the role that opens it (null: no key needed) and the other roles that do (`also`). */
function routes (toolUrl: string): Route[] {
  return [
    { method: 'GET', url: '/v1/tools', role: 'admin' },
    { method: 'GET', url: '/v1/tools/look', role: 'admin' },
    { method: 'PUT', url: '/v1/tools/other', body: { executor: { url: `${toolUrl}/tools/other` }, inputSchema: { type: 'object' } }, role: 'admin' },
    { method: 'DELETE', url: '/v1/tools/other', role: 'admin' },
    { method: 'POST', url: '/v1/runs', body: {}, role: 'orchestrator' },
    { method: 'GET', url: '/v1/runs/r1', role: 'orchestrator', also: ['operator'] },
    { method: 'GET', url: '/v1/runs/r1/tools', role: 'orchestrator' },
    { method: 'POST', url: '/v1/runs/r1/batches', body: { calls: [{ id: 'a', name: 'look', arguments: {} }] }, role: 'orchestrator' },
    { method: 'POST', url: '/v1/runs/r1/messages', body: { kind: 'steering' }, role: 'orchestrator' },
    { method: 'GET', url: '/v1/runs/r1/receipts', role: 'orchestrator' },
    { method: 'GET', url: '/v1/receipts/op_missing', role: 'orchestrator', opened: 404 },
    { method: 'GET', url: '/v1/runs/r1/summary', role: 'orchestrator' },
    { method: 'POST', url: '/v1/runs/r1/cancel', role: 'orchestrator' },
    { method: 'DELETE', url: '/v1/runs/r1', role: 'orchestrator' },
    { method: 'GET', url: '/v1/summary', role: 'operator' },
    { method: 'GET', url: '/healthz', role: null },
    { method: 'GET', url: '/readyz', role: null },
    { method: 'GET', url: '/metrics', role: null }
  ]
}

const KEY_OF = { orchestrator: ORCH, admin: ADMIN, operator: OPS } as const

t.test('each route opens to its role only; 401 without a key or with a wrong one, 403 with another role', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { keysDoc, tools: [tool('look', ex.url, { readOnly: true })] })
  const send = (r: Route, headers: Record<string, string>) => app.inject({
    method: r.method,
    url: r.url,
    headers: r.body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    ...(r.body === undefined ? {} : { payload: JSON.stringify(r.body) })
  })
  // The run the orchestrator routes act on.
  const made = await app.inject({ method: 'POST', url: '/v1/runs', headers: { ...bearer(ORCH), 'content-type': 'application/json' }, payload: '{"runId":"r1"}' })
  t.equal(made.statusCode, 201)

  for (const r of routes(ex.url)) {
    const name = `${r.method} ${r.url}`
    if (r.role === null) {
      const res = await send(r, {})
      t.equal(res.statusCode, 200, `${name} needs no key`)
      continue
    }
    for (const [label, headers, why] of [
      ['no key', {}, 'Bearer realm="toolgate"'],
      ['a wrong key', bearer('not-a-key-of-this-service'), 'Bearer realm="toolgate", error="invalid_token"'],
      ['a key in another scheme', { authorization: `Basic ${Buffer.from(`u:${KEY_OF[r.role]}`).toString('base64')}` }, 'Bearer realm="toolgate", error="invalid_token"'],
      ['the digest presented as the key', bearer(sha256Hex(KEY_OF[r.role])), 'Bearer realm="toolgate", error="invalid_token"']
    ] as const) {
      const res = await send(r, headers)
      t.equal(res.statusCode, 401, `${name} with ${label}: 401`)
      t.equal(res.json().code, 'unauthorized', `${name} with ${label}: code`)
      t.match(res.headers['content-type'], /^application\/problem\+json/, `${name} with ${label}: a problem`)
      t.equal(res.headers['www-authenticate'], why, `${name} with ${label}: WWW-Authenticate`)
    }
    for (const other of ['orchestrator', 'admin', 'operator'] as const) {
      if (other === r.role) continue
      if (r.also?.includes(other) === true) {
        t.notOk([401, 403].includes((await send(r, bearer(KEY_OF[other]))).statusCode), `${name} with the ${other} key: past the key check`)
        continue
      }
      const res = await send(r, bearer(KEY_OF[other]))
      t.equal(res.statusCode, 403, `${name} with the ${other} key: 403`)
      t.equal(res.json().code, 'forbidden', `${name} with the ${other} key: code`)
      t.equal(res.headers['www-authenticate'], undefined, `${name} with the ${other} key: no challenge`)
    }
    const res = await send(r, bearer(KEY_OF[r.role]))
    if (r.opened === undefined) t.ok(res.statusCode < 400, `${name} with the ${r.role} key: ${res.statusCode}`)
    else t.equal(res.statusCode, r.opened, `${name} with the ${r.role} key: past the key check`)
    const all = await send(r, bearer(ALL))
    t.not(all.statusCode, 401, `${name} with a key holding every role is not refused`)
    t.not(all.statusCode, 403, `${name} with a key holding every role is not forbidden`)
  }
})

t.test('the scheme is case-insensitive and surrounding blanks are tolerated; other spellings are refused', async (t) => {
  const { app } = await buildTestApp(t, { keysDoc })
  const cases: Array<[string, number]> = [
    [`Bearer ${ORCH}`, 200],
    [`bearer ${ORCH}`, 200],
    [`BEARER   ${ORCH} `, 200],
    [`Bearer ${ORCH}x`, 401],
    [`Bearer ${ORCH.slice(0, -1)}`, 401],
    [`Bearer ${ORCH} ${ORCH}`, 401],
    [`Token ${ORCH}`, 401],
    [ORCH, 401],
    ['Bearer', 401],
    ['Bearer ', 401],
    ['', 401],
    [`Bearer ${'x'.repeat(10_000)}`, 401]
  ]
  for (const [authorization, status] of cases) {
    const res = await get(app, '/v1/summary', { authorization: authorization.replace(ORCH, OPS) })
    t.equal(res.status, status, JSON.stringify(authorization.slice(0, 40)))
  }
})

t.test('/metrics needs the operator role when TOOLGATE_METRICS_AUTH=true, and nothing otherwise', async (t) => {
  const closed = await buildTestApp(t, { keysDoc, config: { metricsAuth: true } })
  t.equal((await get(closed.app, '/metrics')).status, 401)
  t.equal((await get(closed.app, '/metrics', bearer(ORCH))).status, 403)
  t.equal((await get(closed.app, '/metrics', bearer(ADMIN))).status, 403)
  const ok = await get(closed.app, '/metrics', bearer(OPS))
  t.equal(ok.status, 200)
  t.match(ok.body, /# TYPE/)
  t.equal((await get(closed.app, '/healthz')).status, 200, 'health stays open')
  t.equal((await get(closed.app, '/readyz')).status, 200, 'readiness stays open')

  const open = await buildTestApp(t, { keysDoc, config: { metricsAuth: false } })
  t.equal((await get(open.app, '/metrics')).status, 200)
})

t.test('with no keys the service is open: one tenant with every role and every scope', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('secretive', ex.url, { readOnly: true, requiredScopes: ['vault:read'] })] })
  for (const url of ['/v1/tools', '/v1/summary', '/metrics']) t.equal((await get(app, url)).status, 200, url)
  const made = await app.inject({ method: 'POST', url: '/v1/runs', headers: { 'content-type': 'application/json', authorization: 'Bearer whatever' }, payload: '{"runId":"o1"}' })
  t.equal(made.statusCode, 201, 'any Authorization header is ignored in open mode')
  const batch = await app.inject({ method: 'POST', url: '/v1/runs/o1/batches', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ calls: [{ id: 'a', name: 'secretive', arguments: {} }] }) })
  t.equal(batch.json().results[0].status, 'ok', 'the open tenant holds every scope')
})

t.test('a key given as a digest authenticates with the key, and the digest is compared whatever its case', async (t) => {
  const ring = KeyRing.fromDocument(keysDoc)
  t.equal(ring.open, false)
  t.equal(ring.authenticate(`Bearer ${ADMIN}`)?.tenant, 'ops')
  t.same([...(ring.authenticate(`Bearer ${OPS}`)?.roles ?? [])], ['operator'])
  t.same([...(ring.authenticate(`Bearer ${ORCH}`)?.scopes ?? [])], ['world:write'])
  t.equal(ring.authenticate(undefined), null)
  t.equal(ring.authenticate(`Bearer ${sha256Hex(ADMIN)}`), null)
  const id = ring.authenticate(`Bearer ${ADMIN}`)?.keyId
  t.equal(id, sha256Hex(ADMIN).slice(0, 12), 'the key id is a digest prefix, never the key')
  t.not(id, ADMIN.slice(0, 12))
})

t.test('a bad keys document is refused with every problem listed, each at its place', async (t) => {
  const doc = {
    keys: [
      { key: '', tenant: 'a b', roles: ['root'] },
      { tenant: 'x', roles: [] },
      { key: 'k'.repeat(20), sha256: 'a'.repeat(64), tenant: 't', roles: ['admin'], extra: 1 },
      5,
      { key: 'q'.repeat(20), tenant: 't', roles: ['admin'] },
      { sha256: sha256Hex('q'.repeat(20)), tenant: 't', roles: ['admin'] },
      { sha256: 'not-hex', tenant: 't', roles: ['admin'] },
      { key: 'has a blank in it, somewhere', tenant: 't', roles: ['admin'] }
    ],
    other: true
  }
  const err = t.throws(() => KeyRing.fromDocument(doc)) as unknown
  t.ok(err instanceof KeysFileError)
  const problems = (err as KeysFileError).problems
  const expected = [
    /^\/other: unknown member$/,
    /^\/keys\/0\/key: /,
    /^\/keys\/0\/tenant: /,
    /^\/keys\/0\/roles\/0: must be one of orchestrator, admin, operator, approver$/,
    /^\/keys\/1\/roles: /,
    /^\/keys\/1: give exactly one of "key" or "sha256"$/,
    /^\/keys\/2\/extra: /,
    /^\/keys\/2: give exactly one of "key" or "sha256"$/,
    /^\/keys\/3: /,
    /^\/keys\/5: the same key as \/keys\/4$/,
    /^\/keys\/6\/sha256: /,
    /^\/keys\/7\/key: must not hold spaces or other white space: it is sent as `Authorization: Bearer <key>`/
  ]
  for (const re of expected) t.ok(problems.some((p) => re.test(p)), `lists ${re}`)
  t.equal(problems.length, expected.length, 'and nothing twice')
  t.notMatch((err as Error).message, /q{20}|k{20}|somewhere/, 'the message never repeats a key')

  for (const bad of [null, [], 'keys', { keys: {} }, {}]) {
    t.throws(() => KeyRing.fromDocument(bad), KeysFileError, JSON.stringify(bad))
  }
  const empty = t.throws(() => KeyRing.fromDocument({ keys: [] }), KeysFileError, 'an empty list is refused: running open takes leaving the file unset') as unknown
  t.match((empty as KeysFileError).problems, [/holds no key/])
  t.equal(new KeyRing().open, true)
})

t.test('a keys file is read as JSON or YAML; an unreadable one names the file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-keys-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const yaml = join(dir, 'keys.yaml')
  await writeFile(yaml, `keys:\n  - sha256: ${sha256Hex(ADMIN)}\n    tenant: ops\n    roles: [admin, operator]\n`)
  t.equal((await KeyRing.fromFile(yaml)).authenticate(`Bearer ${ADMIN}`)?.tenant, 'ops')
  const json = join(dir, 'keys.json')
  await writeFile(json, JSON.stringify(keysDoc))
  t.equal((await KeyRing.fromFile(json)).authenticate(`Bearer ${ORCH}`)?.tenant, 'acme')

  const broken = join(dir, 'broken.json')
  await writeFile(broken, '{"keys": [')
  await t.rejects(KeyRing.fromFile(broken), { name: 'KeysFileError', message: /broken\.json/ })
  await t.rejects(KeyRing.fromFile(join(dir, 'missing.json')), { name: 'KeysFileError', message: /missing\.json/ })
})

t.test('a short plain key is accepted, as in the SPEC\'s example, with a warning that names its place and never the key', async (t) => {
  const ring = KeyRing.fromDocument({
    keys: [
      { key: 'plain text'.replace(' ', '-'), tenant: 'acme', roles: ['orchestrator'] },
      { key: 'k'.repeat(16), tenant: 'acme', roles: ['admin'] },
      { sha256: sha256Hex('test'), tenant: 'ops', roles: ['operator'] }
    ]
  })
  t.equal(ring.authenticate('Bearer plain-text')?.tenant, 'acme', 'the short key works')
  t.equal(ring.authenticate('Bearer test')?.tenant, 'ops')
  t.equal(ring.warnings.length, 1, 'one warning: only the short plain key (a digest says nothing of its key\'s length)')
  t.match(ring.warnings[0], /^\/keys\/0\/key: 10 characters is easy to guess/)
  t.notMatch(ring.warnings[0], /plain-text/, 'the warning never holds the key')
})
