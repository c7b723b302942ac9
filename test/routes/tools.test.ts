import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, get, post, startExecutor } from '../helper.js'
import type { CallResult } from '../../src/model/result.js'

type Answer = Awaited<ReturnType<typeof post>>

async function send (app: FastifyInstance, method: 'PUT' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await app.inject({
    method,
    url,
    ...(body === undefined ? {} : { payload: body as object, headers: { 'content-type': 'application/json', ...headers } }),
    ...(body === undefined ? { headers } : {})
  })
  return { status: res.statusCode, body: res.body === '' ? undefined : JSON.parse(res.body), headers: res.headers }
}

const put = (app: FastifyInstance, name: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> =>
  send(app, 'PUT', `/v1/tools/${name}`, body, headers)

function isProblem (t: Test, res: Answer, status: number, code: string): void {
  t.equal(res.status, status, `status ${status}`)
  t.match(String(res.headers['content-type']), /^application\/problem\+json/, 'answered as application/problem+json')
  t.equal(res.body?.code, code, `code ${code}`)
}

const URL_BASE = 'http://127.0.0.1:9/tools'

function def (extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    description: 'Look at a tile.',
    inputSchema: { type: 'object', properties: { x: { type: 'integer' } } },
    executor: { url: `${URL_BASE}/look` },
    ...extra
  }
}

t.test('PUT registers a new tool (201) and answers it with every default filled in', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await put(app, 'look', def())
  t.equal(res.status, 201)
  t.strictSame(res.body, {
    name: 'look',
    description: 'Look at a tile.',
    inputSchema: { type: 'object', properties: { x: { type: 'integer' } } },
    executor: { url: `${URL_BASE}/look`, timeoutMs: 30000 },
    readOnly: false,
    idempotent: false,
    execution: 'auto',
    conflictScope: 'run',
    conflictWaitMs: 30000,
    trackExactRepeats: true,
    aliases: [],
    argumentAliases: {},
    rewrite: [],
    requiredScopes: [],
    requiresApproval: false
  })
  const one = await get(app, '/v1/tools/look')
  t.equal(one.status, 200)
  t.strictSame(one.body, res.body, 'GET answers the same definition')
})

t.test('PUT of an existing name replaces it (200) and the new definition is what GET answers', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal((await put(app, 'look', def({ aliases: ['peek'] }))).status, 201)
  const res = await put(app, 'look', def({ readOnly: true, description: 'Look again.', aliases: ['glance'] }))
  t.equal(res.status, 200)
  t.equal(res.body.readOnly, true)
  const one = await get(app, '/v1/tools/look')
  t.equal(one.body.description, 'Look again.')
  t.strictSame(one.body.aliases, ['glance'])
  // The old alias went with the old definition: another tool may take it now.
  t.equal((await put(app, 'other', def({ aliases: ['peek'] }))).status, 201)
})

t.test('a full definition is kept as given', async (t) => {
  const { app } = await buildTestApp(t)
  const full = {
    name: 'build',
    description: 'Build a registered structure.',
    inputSchema: { type: 'object', properties: { kind: { type: 'string' }, x: { type: 'integer' }, y: { type: 'integer' } }, required: ['kind', 'x', 'y'] },
    executor: { url: `${URL_BASE}/build`, timeoutMs: 1234, statusUrl: `${URL_BASE}/build/status` },
    readOnly: false,
    idempotent: true,
    execution: 'sequential',
    conflictKey: 'tile:{/x}:{/y}',
    conflictScope: 'tenant',
    conflictWaitMs: 5000,
    trackExactRepeats: false,
    aliases: ['construct'],
    argumentAliases: { type: 'kind' },
    rewrite: [
      { op: 'clamp', path: '/x', min: 0, max: 255 },
      { op: 'set', path: '/y', value: 1 },
      { op: 'default', path: '/kind', value: 'wall' },
      { op: 'remove', path: '/secret' }
    ],
    requiredScopes: ['world:write'],
    requiresApproval: true,
    action: { projection: "{ 'action': intent.action }", maxModelReceiptChars: 100 }
  }
  const res = await put(app, 'build', full)
  t.equal(res.status, 201)
  t.strictSame(res.body, full)
})

t.test('GET /v1/tools answers {"tools": [...]} with every tool, defaults filled', async (t) => {
  const { app } = await buildTestApp(t)
  const empty = await get(app, '/v1/tools')
  t.equal(empty.status, 200)
  t.strictSame(empty.body, { tools: [] })
  await put(app, 'look', def({ readOnly: true }))
  await put(app, 'dig', def({ executor: { url: `${URL_BASE}/dig`, timeoutMs: 50 } }))
  const all = await get(app, '/v1/tools')
  t.equal(all.status, 200)
  t.strictSame(Object.keys(all.body), ['tools'])
  t.same(all.body.tools.map((x: { name: string }) => x.name).sort(), ['dig', 'look'])
  const dig = all.body.tools.find((x: { name: string }) => x.name === 'dig')
  t.strictSame(dig.executor, { url: `${URL_BASE}/dig`, timeoutMs: 50 })
  t.equal(dig.readOnly, false)
  t.equal(dig.execution, 'auto')
  t.equal(dig.trackExactRepeats, true)
})

t.test('DELETE answers 204, then the tool is gone: 404 tool_not_found on GET and DELETE', async (t) => {
  const { app } = await buildTestApp(t)
  await put(app, 'look', def({ aliases: ['peek'] }))
  const res = await send(app, 'DELETE', '/v1/tools/look')
  t.equal(res.status, 204)
  t.equal(res.body, undefined, 'no body')
  isProblem(t, await get(app, '/v1/tools/look'), 404, 'tool_not_found')
  isProblem(t, await send(app, 'DELETE', '/v1/tools/look'), 404, 'tool_not_found')
  t.strictSame((await get(app, '/v1/tools')).body, { tools: [] })
  // Its alias is free again.
  t.equal((await put(app, 'peek', def())).status, 201)
})

t.test('GET of an unknown tool is 404 tool_not_found', async (t) => {
  const { app } = await buildTestApp(t)
  isProblem(t, await get(app, '/v1/tools/nosuch'), 404, 'tool_not_found')
})

t.test('a tool registered by PUT is dispatched at once; a deleted one is an unknown_tool', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t)
  t.equal((await put(app, 'look', def({ readOnly: true, executor: { url: `${ex.url}/tools/look` }, aliases: ['peek'] }))).status, 201)
  await post(app, '/v1/runs', { runId: 'r1' })
  const first = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'peek', arguments: { x: 1 } }] })
  t.equal(first.body.results[0].status, 'ok')
  t.equal(first.body.results[0].name, 'peek', 'the result names the call as the model wrote it')
  t.equal(first.body.results[0].details.tool, 'look', 'details name the canonical tool')
  t.equal(ex.calls[0]?.tool, 'look')
  await send(app, 'DELETE', '/v1/tools/look')
  const second = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: { x: 1 } }, { id: 'b', name: 'peek', arguments: {} }] })
  t.same(second.body.results.map((r: CallResult) => r.details.reason), ['unknown_tool', 'unknown_tool'])
  t.equal(ex.calls.length, 1)
})

interface Bad { label: string, name?: string, body: unknown, mentions: RegExp, before?: Array<[string, unknown]>, todo?: string }


const BAD: Bad[] = [
  { label: 'a name with a space in the path', name: 'bad%20name', body: def(), mentions: /name/ },
  { label: 'a name of 65 characters', name: 'n'.repeat(65), body: def(), mentions: /name/ },
  { label: 'a body name with a slash', name: 'look', body: def({ name: 'lo/ok' }), mentions: /name/ },
  { label: 'a body name that differs from the path', name: 'look', body: def({ name: 'other' }), mentions: /name/ },
  { label: 'an inputSchema whose type is a number', name: 'look', body: def({ inputSchema: { type: 12 } }), mentions: /inputSchema/ },
  { label: 'an inputSchema with an unknown type name', name: 'look', body: def({ inputSchema: { type: 'tuple' } }), mentions: /inputSchema/ },
  { label: 'an inputSchema with a bad $ref', name: 'look', body: def({ inputSchema: { type: 'object', properties: { x: { $ref: '#/$defs/missing' } } } }), mentions: /inputSchema/ },
  { label: 'an inputSchema that is not an object', name: 'look', body: def({ inputSchema: 'object' }), mentions: /inputSchema/ },
  { label: 'a missing inputSchema', name: 'look', body: { executor: { url: `${URL_BASE}/look` } }, mentions: /inputSchema/ },
  { label: 'a missing executor', name: 'look', body: { inputSchema: { type: 'object' } }, mentions: /executor/ },
  { label: 'an ftp executor URL', name: 'look', body: def({ executor: { url: 'ftp://127.0.0.1/tools/look' } }), mentions: /executor\/url|url/ },
  { label: 'an executor URL that is not a URL', name: 'look', body: def({ executor: { url: 'not a url' } }), mentions: /url/ },
  { label: 'a timeoutMs of 0', name: 'look', body: def({ executor: { url: `${URL_BASE}/look`, timeoutMs: 0 } }), mentions: /timeoutMs/ },
  { label: 'an unclosed conflictKey template', name: 'look', body: def({ conflictKey: 'tile:{/x' }), mentions: /conflictKey/ },
  { label: 'a conflictKey pointer without a slash', name: 'look', body: def({ conflictKey: 'tile:{x}' }), mentions: /conflictKey/ },
  { label: 'a projection that does not parse', name: 'look', body: def({ action: { projection: '{ "a": ' } }), mentions: /projection/ },
  { label: 'an action tool that is readOnly', name: 'look', body: def({ readOnly: true, action: {} }), mentions: /action|readOnly/ },
  { label: 'an unknown execution hint', name: 'look', body: def({ execution: 'eager' }), mentions: /execution/ },
  { label: 'an unknown rewrite op', name: 'look', body: def({ rewrite: [{ op: 'rename', path: '/x' }] }), mentions: /rewrite/ },
  { label: 'a rewrite path that is not a pointer', name: 'look', body: def({ rewrite: [{ op: 'remove', path: 'x' }] }), mentions: /rewrite/ },
  { label: 'a rewrite on the whole arguments', name: 'look', body: def({ rewrite: [{ op: 'set', path: '', value: {} }] }), mentions: /rewrite/ },
  { label: 'a clamp with min above max', name: 'look', body: def({ rewrite: [{ op: 'clamp', path: '/x', min: 5, max: 1 }] }), mentions: /rewrite/ },
  { label: 'an alias that is its own name', name: 'look', body: def({ aliases: ['look'] }), mentions: /aliases/ },
  { label: "an alias that is another tool's name", name: 'look', body: def({ aliases: ['dig'] }), mentions: /aliases/, before: [['dig', def()]] },
  { label: "an alias that is another tool's alias", name: 'look', body: def({ aliases: ['excavate'] }), mentions: /aliases/, before: [['dig', def({ aliases: ['excavate'] })]] },
  { label: "a name that is another tool's alias", name: 'excavate', body: def(), mentions: /name|alias/, before: [['dig', def({ aliases: ['excavate'] })]] },
  { label: 'an alias with a bad pattern', name: 'look', body: def({ aliases: ['a b'] }), mentions: /aliases/ },
  { label: 'an unknown top-level field', name: 'look', body: def({ colour: 'blue' }), mentions: /colour/ },
  { label: 'an unknown executor field', name: 'look', body: def({ executor: { url: `${URL_BASE}/look`, retries: 3 } }), mentions: /retries/ },
  { label: 'readOnly as a string', name: 'look', body: def({ readOnly: 'yes' }), mentions: /readOnly/ },
  { label: 'requiredScopes not an array', name: 'look', body: def({ requiredScopes: 'world:write' }), mentions: /requiredScopes/ },
  { label: 'an array body', name: 'look', body: [def()], mentions: /./ }
]

// One app serves every bad definition (building an app is the slow part); each case compares the registry before and after.
const shared = await buildTestApp(t)

for (const bad of BAD) {
  t.test(`PUT of a definition with ${bad.label} is 400 invalid_tool naming the problem, and registers nothing`, async (t) => {
    const { app } = shared
    for (const [name, body] of bad.before ?? []) t.ok([200, 201].includes((await put(app, name, body)).status), `setup: ${name}`)
    const before = (await get(app, '/v1/tools')).body
    const res = await put(app, bad.name ?? 'look', bad.body)
    isProblem(t, res, 400, 'invalid_tool')
    t.match(String(res.body?.detail ?? '') + ' ' + JSON.stringify(res.body?.problems ?? []), bad.mentions, 'the problem names what is wrong',
      bad.todo === undefined ? {} : { todo: bad.todo })
    t.strictSame((await get(app, '/v1/tools')).body, before, 'the registry is unchanged')
  })
}

t.test('an invalid replacement leaves the registered tool as it was', async (t) => {
  const { app } = await buildTestApp(t)
  await put(app, 'look', def({ aliases: ['peek'] }))
  const before = (await get(app, '/v1/tools/look')).body
  isProblem(t, await put(app, 'look', def({ inputSchema: { type: 12 }, aliases: [] })), 400, 'invalid_tool')
  t.strictSame((await get(app, '/v1/tools/look')).body, before)
})

t.test("a schema that names itself as the JSON Schema meta-schema is refused (400 invalid_tool), and every later registration is checked as before", async (t) => {
  const { app } = await buildTestApp(t)
  t.equal((await put(app, 'first', def())).status, 201)
  const hostile = await put(app, 'hostile', def({ inputSchema: { $id: 'https://json-schema.org/draft/2020-12/schema', type: 'object' } }))
  isProblem(t, hostile, 400, 'invalid_tool')
  t.match(JSON.stringify(hostile.body), /already exists/)
  t.equal((await put(app, 'look', def())).status, 201, 'the next tool registers')
  isProblem(t, await put(app, 'odd', def({ inputSchema: { type: 'object', properties: { x: { type: 'nonsense' } } } })), 400, 'invalid_tool')
  t.equal((await get(app, '/v1/tools/hostile')).status, 404)
})

t.test('an invalid definition lists several problems at once', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await put(app, 'look', def({ inputSchema: { type: 12 }, conflictKey: 'k:{/x', executor: { url: 'ftp://h/x' } }))
  isProblem(t, res, 400, 'invalid_tool')
  const text = String(res.body.detail) + JSON.stringify(res.body.problems ?? [])
  t.match(text, /inputSchema/)
  t.match(text, /conflictKey/)
  t.match(text, /url/)
})

t.test('the tool routes need the admin role', async (t) => {
  const keysDoc = {
    keys: [
      { key: 'admin-key-0123456789ab', tenant: 'ops', roles: ['admin'] },
      { key: 'orch-key-0123456789abc', tenant: 'acme', roles: ['orchestrator'] }
    ]
  }
  const { app } = await buildTestApp(t, { keysDoc })
  const admin = { authorization: 'Bearer admin-key-0123456789ab' }
  const orch = { authorization: 'Bearer orch-key-0123456789abc' }
  isProblem(t, await put(app, 'look', def()), 401, 'unauthorized')
  isProblem(t, await put(app, 'look', def(), orch), 403, 'forbidden')
  isProblem(t, await get(app, '/v1/tools', orch), 403, 'forbidden')
  t.equal((await put(app, 'look', def(), admin)).status, 201)
  t.equal((await get(app, '/v1/tools/look', admin)).status, 200)
  isProblem(t, await send(app, 'DELETE', '/v1/tools/look', undefined, orch), 403, 'forbidden')
  t.equal((await send(app, 'DELETE', '/v1/tools/look', undefined, admin)).status, 204)
})
