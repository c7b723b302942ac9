import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, get, post, startExecutor, tool, type TestExecutor } from '../helper.js'

type Answer = Awaited<ReturnType<typeof post>>

/** Sends a raw body (string) with a content type through inject. */
async function raw (app: FastifyInstance, url: string, payload: string, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<Answer> {
  const res = await app.inject({ method: 'POST', url, payload, headers })
  let body: unknown
  try { body = JSON.parse(res.body) } catch { body = res.body }
  return { status: res.statusCode, body, headers: res.headers }
}

function isProblem (t: Test, res: Answer, status: number, code: string): void {
  t.equal(res.status, status, `status ${status}`)
  t.match(String(res.headers['content-type']), /^application\/problem\+json/, 'answered as application/problem+json')
  t.equal(res.body?.code, code, `code ${code}`)
  t.equal(res.body?.status, status, 'the problem repeats the status')
  t.type(res.body?.title, 'string', 'the problem has a title')
}

/** TOOLGATE_MAX_CALLS_PER_BATCH and TOOLGATE_BODY_LIMIT_BYTES of the shared app. */
const MAX_CALLS = 3
const BODY_LIMIT = 4096

// One executor and one app for the whole file (building an app is the slow part); each test has its own run.
const shared = await (async () => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, {
    config: { maxCallsPerBatch: MAX_CALLS, bodyLimitBytes: BODY_LIMIT },
    tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)]
  })
  return { app, ex }
})()
let runs = 0

interface Fixture { app: FastifyInstance, ex: TestExecutor, runId: string, url: string }

/** A fresh run on the shared app. */
async function setup (t: Test): Promise<Fixture> {
  const runId = `r${++runs}`
  t.equal((await post(shared.app, '/v1/runs', { runId })).status, 201)
  return { ...shared, runId, url: `/v1/runs/${runId}/batches` }
}

/** Nothing changed: the run has no turn, no call, no token, no batch in flight, and the executor saw nothing. */
async function unchanged (t: Test, f: Fixture): Promise<void> {
  const run = await get(f.app, `/v1/runs/${f.runId}`)
  t.equal(run.status, 200)
  t.equal(run.body.state, 'active', 'the run is still active')
  t.strictSame(run.body.counters, { turns: 0, toolCalls: 0, totalTokens: 0 }, 'the run counters are unchanged')
  t.equal(f.ex.calls.filter((c) => c.runId === f.runId).length, 0, 'the executor was never called')
  // The run is not left busy and the refused batch id is not taken.
  const next = await post(f.app, f.url, { batchId: 'b1', calls: [{ id: 'c1', name: 'look', arguments: {} }] })
  t.equal(next.status, 200, 'a good batch goes through afterwards')
  t.equal(next.body.turn, 1, 'as the first turn')
}

const deep = (levels: number): unknown => {
  let v: unknown = {}
  for (let i = 1; i < levels; i++) v = { a: v }
  return v
}

const good = { id: 'c1', name: 'look', arguments: {} }

const JSON_CASES: Array<{ label: string, payload: string, status: number, code: string, headers?: Record<string, string> }> = [
  { label: 'malformed JSON', payload: '{"calls": [', status: 400, code: 'invalid_request' },
  { label: 'JSON with trailing garbage', payload: '{"calls": []} x', status: 400, code: 'invalid_request' },
  { label: 'an empty body', payload: '', status: 400, code: 'invalid_request' },
  { label: 'a blank body', payload: '   \n', status: 400, code: 'invalid_request' },
  { label: 'a JSON null body', payload: 'null', status: 400, code: 'invalid_request' },
  { label: 'a JSON string body', payload: '"calls"', status: 400, code: 'invalid_request' },
  { label: 'a JSON array body', payload: '[]', status: 400, code: 'invalid_request' },
  { label: 'calls missing', payload: '{}', status: 400, code: 'invalid_request' },
  { label: 'calls not an array', payload: JSON.stringify({ calls: { id: 'c1', name: 'look' } }), status: 400, code: 'invalid_request' },
  { label: 'a call id that is a number', payload: JSON.stringify({ calls: [{ id: 1, name: 'look' }] }), status: 400, code: 'invalid_request' },
  { label: 'a call name that is a number', payload: JSON.stringify({ calls: [{ id: 'c1', name: 7 }] }), status: 400, code: 'invalid_request' },
  { label: 'a call without a name', payload: JSON.stringify({ calls: [{ id: 'c1' }] }), status: 400, code: 'invalid_request' },
  { label: 'an empty call id', payload: JSON.stringify({ calls: [{ id: '', name: 'look' }] }), status: 400, code: 'invalid_request' },
  { label: 'arguments that are a number', payload: JSON.stringify({ calls: [{ id: 'c1', name: 'look', arguments: 5 }] }), status: 400, code: 'invalid_request' },
  { label: 'a call that is a string', payload: JSON.stringify({ calls: ['look'] }), status: 400, code: 'invalid_request' },
  { label: 'negative usage tokens', payload: JSON.stringify({ calls: [good], usage: { inputTokens: -1 } }), status: 400, code: 'invalid_request' },
  { label: 'usage tokens as strings', payload: JSON.stringify({ calls: [good], usage: { inputTokens: '10' } }), status: 400, code: 'invalid_request' },
  { label: 'an unknown top-level field', payload: JSON.stringify({ calls: [good], priority: 'high' }), status: 400, code: 'invalid_request' },
  { label: 'an unknown field in a call', payload: JSON.stringify({ calls: [{ ...good, type: 'function' }] }), status: 400, code: 'invalid_request' },
  { label: 'an unknown field in usage', payload: JSON.stringify({ calls: [good], usage: { cachedTokens: 3 } }), status: 400, code: 'invalid_request' },
  { label: 'a batchId with a space', payload: JSON.stringify({ batchId: 'b 1', calls: [good] }), status: 400, code: 'invalid_request' },
  { label: 'a batchId that is a number', payload: JSON.stringify({ batchId: 1, calls: [good] }), status: 400, code: 'invalid_request' },
  {
    label: 'one call more than TOOLGATE_MAX_CALLS_PER_BATCH',
    payload: JSON.stringify({ calls: [1, 2, 3, 4].map((i) => ({ id: `c${i}`, name: 'look', arguments: {} })) }),
    status: 400,
    code: 'invalid_request'
  },
  {
    label: 'duplicate call ids',
    payload: JSON.stringify({ calls: [good, { id: 'c2', name: 'look' }, { id: 'c1', name: 'poke', arguments: {} }] }),
    status: 400,
    code: 'duplicate_call_id'
  },
  {
    label: 'a body over TOOLGATE_BODY_LIMIT_BYTES',
    payload: JSON.stringify({ calls: [{ id: 'c1', name: 'look', arguments: { k: 'x'.repeat(BODY_LIMIT) } }] }),
    status: 413,
    code: 'payload_too_large'
  },
  {
    label: 'arguments nested deeper than 64 levels',
    payload: JSON.stringify({ calls: [{ id: 'c1', name: 'look', arguments: deep(70) }] }),
    status: 400,
    code: 'invalid_request'
  },
  {
    label: 'arrays nested deeper than 64 levels',
    payload: `{"calls": [{"id": "c1", "name": "look", "arguments": {"k": ${'['.repeat(100)}${']'.repeat(100)}}}]}`,
    status: 400,
    code: 'invalid_request'
  },
  { label: 'a __proto__ key at the top', payload: '{"calls": [], "__proto__": {"polluted": true}}', status: 400, code: 'invalid_request' },
  {
    label: 'a __proto__ key inside arguments',
    payload: '{"calls": [{"id": "c1", "name": "look", "arguments": {"__proto__": {"polluted": true}}}]}',
    status: 400,
    code: 'invalid_request'
  },
  {
    label: 'a constructor.prototype key inside arguments',
    payload: '{"calls": [{"id": "c1", "name": "look", "arguments": {"constructor": {"prototype": {"polluted": true}}}}]}',
    status: 400,
    code: 'invalid_request'
  },
  {
    label: 'a batchId that differs from the Idempotency-Key header',
    payload: JSON.stringify({ batchId: 'b-body', calls: [good] }),
    status: 400,
    code: 'invalid_request',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'b-header' }
  },
  {
    label: 'an Idempotency-Key header that does not match the pattern',
    payload: JSON.stringify({ calls: [good] }),
    status: 400,
    code: 'invalid_request',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'has space' }
  },
  { label: 'a text/plain body', payload: JSON.stringify({ calls: [good] }), status: 415, code: 'unsupported_media_type', headers: { 'content-type': 'text/plain' } },
  { label: 'a form body', payload: 'calls=look', status: 415, code: 'unsupported_media_type', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
  { label: 'a body without a content type', payload: JSON.stringify({ calls: [good] }), status: 415, code: 'unsupported_media_type', headers: {} }
]

for (const c of JSON_CASES) {
  t.test(`a batch with ${c.label} answers ${c.status} ${c.code} and changes nothing`, async (t) => {
    const f = await setup(t)
    const res = await raw(f.app, f.url, c.payload, c.headers ?? { 'content-type': 'application/json' })
    isProblem(t, res, c.status, c.code)
    t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype was polluted')
    await unchanged(t, f)
  })
}

t.test('exactly TOOLGATE_MAX_CALLS_PER_BATCH calls are accepted', async (t) => {
  const f = await setup(t)
  const res = await post(f.app, f.url, { calls: [1, 2, 3].map((i) => ({ id: `c${i}`, name: 'look', arguments: { x: i } })) })
  t.equal(res.status, 200)
  t.equal(res.body.results.length, 3)
})

t.test('the default TOOLGATE_MAX_CALLS_PER_BATCH is 128', async (t) => {
  const { app } = await buildTestApp(t)
  await post(app, '/v1/runs', { runId: 'r-default' })
  const calls = Array.from({ length: 129 }, (_, i) => ({ id: `c${i}`, name: 'nosuch' }))
  isProblem(t, await post(app, '/v1/runs/r-default/batches', { calls }), 400, 'invalid_request')
  const ok = await post(app, '/v1/runs/r-default/batches', { calls: calls.slice(0, 128) })
  t.equal(ok.status, 200)
  t.equal(ok.body.results.length, 128)
})

t.test('a body nested exactly 64 levels deep is accepted', async (t) => {
  const f = await setup(t)
  // body (1) > calls (2) > call (3) > arguments (4) ... 61 levels of arguments reach 64.
  const res = await post(f.app, f.url, { calls: [{ id: 'c1', name: 'look', arguments: { k: 'v', y: 1, x: 1, ...(deep(61) as object) } }] })
  t.equal(res.status, 200)
  t.equal(res.body.results[0].status, 'ok')
})

t.test('a body one level deeper than 64 is refused', async (t) => {
  const f = await setup(t)
  const res = await post(f.app, f.url, { calls: [{ id: 'c1', name: 'look', arguments: { ...(deep(62) as object) } }] })
  isProblem(t, res, 400, 'invalid_request')
  await unchanged(t, f)
})

t.test('a runId in the batch path that does not match the pattern is 400 and creates nothing', async (t) => {
  const f = await setup(t)
  const before = (await f.app.services.store.countRuns()).total
  for (const id of ['bad%20id', 'a%2Fb', 'r!', 'r%00x']) {
    const res = await post(f.app, `/v1/runs/${id}/batches`, { calls: [good] })
    isProblem(t, res, 400, 'invalid_request')
  }
  t.equal((await f.app.services.store.countRuns()).total, before, 'no run was created')
  await unchanged(t, f)
})

t.test('a batch for an unknown run is 404 run_not_found and creates nothing', async (t) => {
  const f = await setup(t)
  const before = (await f.app.services.store.countRuns()).total
  isProblem(t, await post(f.app, '/v1/runs/nosuch/batches', { calls: [good] }), 404, 'run_not_found')
  t.equal((await f.app.services.store.countRuns()).total, before, 'no run was created')
  await unchanged(t, f)
})

t.test('the same batchId in the body and the header is accepted', async (t) => {
  const f = await setup(t)
  const res = await post(f.app, f.url, { batchId: 'same', calls: [good] }, { 'idempotency-key': 'same' })
  t.equal(res.status, 200)
  t.equal(res.body.batchId, 'same')
})

t.test('bad bodies on the other JSON routes are 4xx problems too', async (t) => {
  const f = await setup(t)
  const before = (await f.app.services.store.countRuns()).total
  isProblem(t, await raw(f.app, '/v1/runs', '{"runId": '), 400, 'invalid_request')
  isProblem(t, await raw(f.app, '/v1/runs', '{"__proto__": {"polluted": true}}'), 400, 'invalid_request')
  isProblem(t, await raw(f.app, '/v1/runs', '{"runId": "x"}', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type')
  isProblem(t, await raw(f.app, `/v1/runs/${f.runId}/messages`, '{"kind": '), 400, 'invalid_request')
  const putRes = await f.app.inject({ method: 'PUT', url: '/v1/tools/look', payload: '{"inputSchema": ', headers: { 'content-type': 'application/json' } })
  t.equal(putRes.statusCode, 400)
  t.match(String(putRes.headers['content-type']), /^application\/problem\+json/)
  t.equal((await f.app.services.store.countRuns()).total, before, 'no run was created')
  t.equal((await get(f.app, '/v1/tools/look')).body.inputSchema.type, 'object', 'the tool is unchanged')
  await unchanged(t, f)
})

t.test('a flood of odd bodies never gets a 5xx', async (t) => {
  const f = await setup(t)
  const payloads = [
    '{', '}', '[', '{"calls": null}', '{"calls": [null]}', '{"calls": [[]]}', '{"calls": [{}]}', '{"calls": [{"id": null, "name": null}]}',
    '{"calls": [{"id": "a", "name": "look", "arguments": []}]}', '{"calls": [{"id": "a", "name": "look", "arguments": true}]}',
    '{"calls": "[]"}', '{"calls": [], "usage": null}', '{"calls": [], "batchId": ""}', '\u0000', '\ufeff{"calls": []}',
    '{"calls": [{"id": "a", "name": "look", "arguments": "{\\"x\\": "}]}', '1e999', '{"calls": [], "calls": [1]}'
  ]
  for (const payload of payloads) {
    const res = await raw(f.app, f.url, payload)
    t.ok(res.status < 500, `${JSON.stringify(payload)} answers ${res.status}`)
    if (res.status >= 400) t.match(String(res.headers['content-type']), /^application\/problem\+json/, `${JSON.stringify(payload)} is a problem`)
  }
})
