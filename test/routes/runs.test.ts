import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { DEFAULT_LIMITS, buildTestApp, get, holdCalls, post, sleep, startExecutor, tool } from '../helper.js'
import type { CallResult } from '../../src/model/result.js'
import type { RunView } from '../../src/runs/view.js'

type Answer = Awaited<ReturnType<typeof post>>

const RUN_ID = /^[A-Za-z0-9_.:-]{1,128}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

async function del (app: FastifyInstance, url: string): Promise<Answer> {
  const res = await app.inject({ method: 'DELETE', url })
  return { status: res.statusCode, body: res.body === '' ? undefined : JSON.parse(res.body), headers: res.headers }
}

function isProblem (t: Test, res: Answer, status: number, code: string): void {
  t.equal(res.status, status, `status ${status}`)
  t.match(String(res.headers['content-type']), /^application\/problem\+json/, 'answered as application/problem+json')
  t.equal(res.body?.code, code, `code ${code}`)
  t.equal(res.body?.status, status, 'the problem repeats the status')
}

/** Checks every default of a freshly created run. */
function hasDefaults (t: Test, run: RunView, maxConcurrentTools = 8): void {
  t.equal(run.state, 'active')
  t.notOk('terminationReason' in run, 'no terminationReason while active')
  t.equal(run.toolExecution, 'safeParallel')
  t.equal(run.maxConcurrentTools, maxConcurrentTools)
  t.strictSame(run.limits, DEFAULT_LIMITS)
  t.equal(run.tools, null)
  t.equal(run.events, 'stock')
  t.strictSame(run.metadata, {})
  t.strictSame(run.counters, { turns: 0, toolCalls: 0, totalTokens: 0 })
  t.match(run.createdAt, ISO)
  t.match(run.expiresAt, ISO)
}

// One executor and one app serve the tests that need no special configuration (building an app is the slow part).
const shared = await (async () => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('slow', ex.url), tool('poke', ex.url)] })
  return { ex, app }
})()
const callsOf = (runId: string): string[] => shared.ex.calls.filter((c) => c.runId === runId).map((c) => c.callId)

t.test('a run created without any body gets a generated id and every default', async (t) => {
  const { app } = shared
  const res = await app.inject({ method: 'POST', url: '/v1/runs' })
  t.equal(res.statusCode, 201, 'answers 201')
  if (res.statusCode !== 201) return
  const run = res.json()
  t.type(run.runId, 'string')
  t.match(run.runId, RUN_ID)
  hasDefaults(t, run)
})

t.test('a run created with {} gets a generated id and every default; two such runs get different ids', async (t) => {
  const { app } = shared
  const a = await post(app, '/v1/runs', {})
  const b = await post(app, '/v1/runs', {})
  t.equal(a.status, 201)
  t.equal(b.status, 201)
  t.match(a.body.runId, RUN_ID)
  t.match(b.body.runId, RUN_ID)
  t.not(a.body.runId, b.body.runId)
  hasDefaults(t, a.body)
  const read = await get(app, `/v1/runs/${a.body.runId}`)
  t.equal(read.status, 200)
  t.strictSame(read.body.limits, DEFAULT_LIMITS)
})

t.test('a run created with every field answers them back as its effective options', async (t) => {
  const { app } = shared
  const body = {
    runId: 'Run_1.a:b-c',
    toolExecution: 'sequential',
    maxConcurrentTools: 3,
    limits: {
      exactToolRepeatAdvisoryThreshold: 0,
      exactToolRepeatTerminationThreshold: 5,
      maxTurns: 10,
      maxToolCalls: 100,
      timeoutMs: 60000,
      maxTotalTokens: 50000,
      cycleAdvisoryRepetitions: 2,
      cycleTerminationRepetitions: 0,
      consecutiveErrorAdvisory: 4,
      consecutiveErrorTermination: 12,
      noProgressAdvisory: 0,
      noProgressTermination: 40
    },
    tools: ['look', 'build'],
    events: 'lifecycle',
    metadata: { user: 'u-1', purpose: 'test' }
  }
  const res = await post(app, '/v1/runs', body)
  t.equal(res.status, 201)
  t.equal(res.body.runId, 'Run_1.a:b-c')
  t.equal(res.body.state, 'active')
  t.equal(res.body.toolExecution, 'sequential')
  t.equal(res.body.maxConcurrentTools, 3)
  t.strictSame(res.body.limits, body.limits)
  t.strictSame(res.body.tools, ['look', 'build'])
  t.equal(res.body.events, 'lifecycle')
  t.strictSame(res.body.metadata, { user: 'u-1', purpose: 'test' })
  t.strictSame(res.body.counters, { turns: 0, toolCalls: 0, totalTokens: 0 })
  const read = await get(app, '/v1/runs/Run_1.a:b-c')
  t.equal(read.status, 200)
  t.strictSame(read.body.limits, body.limits)
  t.strictSame(read.body.metadata, body.metadata)
})

t.test('limits given in part are completed with the defaults', async (t) => {
  const { app } = shared
  const res = await post(app, '/v1/runs', { limits: { maxTurns: 4 } })
  t.equal(res.status, 201)
  t.strictSame(res.body.limits, { ...DEFAULT_LIMITS, maxTurns: 4 })
})

t.test('expiresAt is createdAt plus the run TTL, default 3600 seconds', async (t) => {
  const { app } = shared
  const res = await post(app, '/v1/runs', {})
  t.equal(Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt), 3600 * 1000)
})

t.test('expiresAt follows TOOLGATE_RUN_TTL_SECONDS', async (t) => {
  const { app } = await buildTestApp(t, { config: { runTtlSeconds: 90 } })
  const res = await post(app, '/v1/runs', {})
  t.equal(Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt), 90 * 1000)
})

t.test('maxConcurrentTools defaults to TOOLGATE_MAX_CONCURRENT_TOOLS', async (t) => {
  const { app } = await buildTestApp(t, { config: { maxConcurrentTools: 5 } })
  const res = await post(app, '/v1/runs', {})
  t.equal(res.status, 201)
  hasDefaults(t, res.body, 5)
  const explicit = await post(app, '/v1/runs', { maxConcurrentTools: 2 })
  t.equal(explicit.body.maxConcurrentTools, 2)
})

t.test('a runId that exists already answers 409 run_exists and leaves the first run as it was', async (t) => {
  const { app } = shared
  const first = await post(app, '/v1/runs', { runId: 'dup', maxConcurrentTools: 2, metadata: { a: '1' } })
  t.equal(first.status, 201)
  const again = await post(app, '/v1/runs', { runId: 'dup', maxConcurrentTools: 7 })
  isProblem(t, again, 409, 'run_exists')
  const read = await get(app, '/v1/runs/dup')
  t.equal(read.body.maxConcurrentTools, 2)
  t.strictSame(read.body.metadata, { a: '1' })
  t.equal(read.body.createdAt, first.body.createdAt)
})

t.test('invalid run options are 400 invalid_request and create nothing', async (t) => {
  const { app } = shared
  const before = (await app.services.store.countRuns()).total
  const cases: Array<[string, unknown]> = [
    ['a runId with a space', { runId: 'has space' }],
    ['a runId of 129 characters', { runId: 'r'.repeat(129) }],
    ['an empty runId', { runId: '' }],
    ['an unknown toolExecution', { toolExecution: 'fast' }],
    ['maxConcurrentTools 0', { maxConcurrentTools: 0 }],
    ['maxConcurrentTools 257', { maxConcurrentTools: 257 }],
    ['maxConcurrentTools as a fraction', { maxConcurrentTools: 1.5 }],
    ['maxConcurrentTools as a string', { maxConcurrentTools: '8' }],
    ['a negative threshold', { limits: { exactToolRepeatAdvisoryThreshold: -1 } }],
    ['maxTurns 0', { limits: { maxTurns: 0 } }],
    ['an unknown limit', { limits: { maxCalls: 3 } }],
    ['an unknown events audience', { events: 'all' }],
    ['metadata with a number value', { metadata: { a: 1 } }],
    ['tools not an array', { tools: 'look' }],
    ['an unknown field', { runId: 'x1', colour: 'blue' }],
    ['an array body', []]
  ]
  for (const [label, body] of cases) {
    const res = await post(app, '/v1/runs', body)
    t.equal(res.status, 400, `${label}: 400`)
    t.equal(res.body?.code, 'invalid_request', `${label}: invalid_request`)
  }
  t.equal((await app.services.store.countRuns()).total, before, 'no run was created')
})

t.test("DELETE frees the run-level rules' slices of the run (the repeat streak, the loop state) in the step that ends it", async (t) => {
  const { app } = shared
  await post(app, '/v1/runs', { runId: 'r-end-free' })
  for (const id of ['a', 'b']) await post(app, '/v1/runs/r-end-free/batches', { calls: [{ id, name: 'look', arguments: { x: 1 } }] })
  const before = await app.services.store.getRun('r-end-free')
  t.equal(before?.repeat.count, 2, 'a streak of two exact repeats')
  t.ok(before?.loops !== undefined, 'and loop state')
  t.equal((await del(app, '/v1/runs/r-end-free')).status, 200)
  const after = await app.services.store.getRun('r-end-free')
  t.equal(after?.state, 'ended')
  t.same(after?.repeat, { fingerprint: null, count: 0, advised: false }, 'the streak is freed')
  t.equal(after?.loops, undefined, 'the loop state too')
})

t.test('DELETE ends the run; a later batch answers 409 run_not_active with the terminationReason', async (t) => {
  const { app } = shared
  await post(app, '/v1/runs', { runId: 'r-end' })
  const ended = await del(app, '/v1/runs/r-end')
  t.equal(ended.status, 200)
  t.equal(ended.body.runId, 'r-end')
  t.equal(ended.body.state, 'ended')
  t.equal(ended.body.terminationReason, 'ended')
  const read = await get(app, '/v1/runs/r-end')
  t.equal(read.status, 200)
  t.equal(read.body.state, 'ended')
  const batch = await post(app, '/v1/runs/r-end/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }] })
  isProblem(t, batch, 409, 'run_not_active')
  t.equal(batch.body.terminationReason, 'ended')
  t.strictSame(callsOf('r-end'), [], 'nothing dispatched')
  const after = await get(app, '/v1/runs/r-end')
  t.equal(after.body.counters.turns, 0, 'the refused batch is not a turn')
})

t.test('cancel sets the run to cancelled; a later batch answers 409 run_not_active', async (t) => {
  const { app } = shared
  await post(app, '/v1/runs', { runId: 'r-cancel' })
  const cancelled = await post(app, '/v1/runs/r-cancel/cancel', {})
  t.equal(cancelled.status, 200)
  t.equal(cancelled.body.state, 'cancelled')
  t.equal(cancelled.body.terminationReason, 'cancelled')
  const batch = await post(app, '/v1/runs/r-cancel/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }] })
  isProblem(t, batch, 409, 'run_not_active')
  t.equal(batch.body.terminationReason, 'cancelled')
  t.strictSame(callsOf('r-cancel'), [])
})

t.test('cancel with no body and without a content type works too', async (t) => {
  const { app } = shared
  await post(app, '/v1/runs', { runId: 'r-c2' })
  const res = await app.inject({ method: 'POST', url: '/v1/runs/r-c2/cancel' })
  t.equal(res.statusCode, 200)
  t.equal(res.json().state, 'cancelled')
})

t.test('cancel during a batch: the running call settles, the calls not started are cancelled, the run is cancelled', async (t) => {
  const { app, ex } = shared
  const { started: isStarted, release } = holdCalls(ex, 'slow')
  await post(app, '/v1/runs', { runId: 'r-mid' })
  const pending = post(app, '/v1/runs/r-mid/batches', {
    calls: [{ id: 'a', name: 'slow', arguments: {} }, { id: 'b', name: 'poke', arguments: {} }]
  })
  await isStarted
  const cancelled = await post(app, '/v1/runs/r-mid/cancel', {})
  t.equal(cancelled.status, 200)
  t.equal(cancelled.body.state, 'cancelled')
  release()
  const res = await pending
  t.equal(res.status, 200)
  t.same(res.body.results.map((r: CallResult) => [r.callId, r.status]), [['a', 'ok'], ['b', 'cancelled']])
  t.equal(res.body.continue, false)
  t.equal(res.body.run.state, 'cancelled')
  t.same(callsOf('r-mid'), ['a'], 'the second call never reached its executor')
})

t.test('messages of kind steering and follow_up answer 200 with the run; other kinds are 400', async (t) => {
  const { app } = shared
  await post(app, '/v1/runs', { runId: 'r-msg' })
  for (const kind of ['steering', 'follow_up']) {
    const res = await post(app, '/v1/runs/r-msg/messages', { kind })
    t.equal(res.status, 200, `${kind}: 200`)
    t.equal(res.body.runId, 'r-msg')
    t.equal(res.body.state, 'active')
  }
  for (const body of [{ kind: 'user' }, { kind: '' }, { kind: 1 }, {}, { text: 'hello' }]) {
    const res = await post(app, '/v1/runs/r-msg/messages', body)
    isProblem(t, res, 400, 'invalid_request')
  }
  const noBody = await app.inject({ method: 'POST', url: '/v1/runs/r-msg/messages' })
  t.equal(noBody.statusCode, 400, 'a message without a body is 400')
  t.equal(noBody.json().code, 'invalid_request')
})

t.test('a message to a run that is not active answers 409 run_not_active', async (t) => {
  const { app } = shared
  await post(app, '/v1/runs', { runId: 'r-msg2' })
  await del(app, '/v1/runs/r-msg2')
  const res = await post(app, '/v1/runs/r-msg2/messages', { kind: 'steering' })
  isProblem(t, res, 409, 'run_not_active')
  t.equal(res.body.terminationReason, 'ended')
})

t.test('every run route answers 404 run_not_found for an unknown run', async (t) => {
  const { app } = shared
  const before = (await app.services.store.countRuns()).total
  const checks = [
    await get(app, '/v1/runs/nope'),
    await del(app, '/v1/runs/nope'),
    await get(app, '/v1/runs/nope/tools'),
    await post(app, '/v1/runs/nope/messages', { kind: 'steering' }),
    await post(app, '/v1/runs/nope/cancel', {}),
    await post(app, '/v1/runs/nope/batches', { calls: [] })
  ]
  for (const res of checks) isProblem(t, res, 404, 'run_not_found')
  t.equal((await app.services.store.countRuns()).total, before, 'nothing was created')
})

t.test('a run id in the path that does not match the pattern is 400, not a lookup', async (t) => {
  const { app } = shared
  isProblem(t, await get(app, '/v1/runs/bad%20id'), 400, 'invalid_request')
  isProblem(t, await get(app, '/v1/runs/a!b'), 400, 'invalid_request')
})

t.test('a run id of 129 characters in the path is a 400 problem', async (t) => {
  const { app } = shared
  const res = await get(app, `/v1/runs/${'r'.repeat(129)}`)
  isProblem(t, res, 400, 'invalid_request')
})

t.test('a run id of the longest allowed length (128) works in every run route', async (t) => {
  const { app } = shared
  const id = 'r'.repeat(128)
  t.equal((await post(app, '/v1/runs', { runId: id })).status, 201)
  const read = await get(app, `/v1/runs/${id}`)
  t.equal(read.status, 200, 'GET answers 200')
  t.equal(read.body?.runId, id, 'with the run')
  const batch = await post(app, `/v1/runs/${id}/batches`, { calls: [] })
  t.equal(batch.status, 200, 'a batch answers 200')
  t.equal((await post(app, `/v1/runs/${id}/cancel`, {})).status, 200, 'cancel answers 200')
})

t.test('the tools offered in a run are filtered by its allow-list and show only name, description and inputSchema', async (t) => {
  const url = 'http://127.0.0.1:9'
  const { app } = await buildTestApp(t, {
    tools: [
      tool('look', url, { readOnly: true, rewrite: [{ op: 'clamp', path: '/x', min: 0, max: 9 }] }),
      tool('build', url, { conflictKey: 'tile:{/x}', action: { projection: '{"a": 1}' } }),
      tool('dig', url)
    ]
  })
  const all = await post(app, '/v1/runs', { runId: 'r-all' })
  t.equal(all.status, 201)
  const offeredAll = await get(app, '/v1/runs/r-all/tools')
  t.equal(offeredAll.status, 200)
  t.same(offeredAll.body.tools.map((x: { name: string }) => x.name).sort(), ['build', 'dig', 'look'])
  for (const offered of offeredAll.body.tools) {
    t.strictSame(Object.keys(offered).sort(), ['description', 'inputSchema', 'name'], `${offered.name}: only name, description, inputSchema`)
    t.equal(offered.description, `The ${offered.name} tool.`)
    t.equal(offered.inputSchema.type, 'object')
  }
  t.notMatch(JSON.stringify(offeredAll.body), /127\.0\.0\.1|clamp|projection|conflictKey/, 'nothing of the host leaks')

  await post(app, '/v1/runs', { runId: 'r-some', tools: ['look', 'nosuch'] })
  const offeredSome = await get(app, '/v1/runs/r-some/tools')
  t.same(offeredSome.body.tools.map((x: { name: string }) => x.name), ['look'])

  await post(app, '/v1/runs', { runId: 'r-none', tools: [] })
  const offeredNone = await get(app, '/v1/runs/r-none/tools')
  t.strictSame(offeredNone.body, { tools: [] })
})

t.test("the tools offered in a run leave out those whose scopes the caller's key lacks", async (t) => {
  const url = 'http://127.0.0.1:9'
  const keysDoc = {
    keys: [
      { key: 'reader-key-0123456789', tenant: 'acme', roles: ['orchestrator'], scopes: ['world:read'] },
      { key: 'writer-key-0123456789', tenant: 'acme', roles: ['orchestrator'], scopes: ['world:read', 'world:write'] }
    ]
  }
  const { app } = await buildTestApp(t, {
    keysDoc,
    tools: [
      tool('look', url, { readOnly: true, requiredScopes: ['world:read'] }),
      tool('build', url, { requiredScopes: ['world:read', 'world:write'] }),
      tool('ping', url, { readOnly: true })
    ]
  })
  const reader = { authorization: 'Bearer reader-key-0123456789' }
  const writer = { authorization: 'Bearer writer-key-0123456789' }
  const run = await post(app, '/v1/runs', { runId: 'r-scopes' }, reader)
  t.equal(run.status, 201)
  const forReader = await get(app, '/v1/runs/r-scopes/tools', reader)
  t.same(forReader.body.tools.map((x: { name: string }) => x.name).sort(), ['look', 'ping'])
  const forWriter = await get(app, '/v1/runs/r-scopes/tools', writer)
  t.same(forWriter.body.tools.map((x: { name: string }) => x.name).sort(), ['build', 'look', 'ping'])
  const anonymous = await get(app, '/v1/runs/r-scopes/tools')
  isProblem(t, anonymous, 401, 'unauthorized')
})

t.test('another tenant gets 404 run_not_found for a run it does not own', async (t) => {
  const keysDoc = {
    keys: [
      { key: 'acme-key-0123456789ab', tenant: 'acme', roles: ['orchestrator'] },
      { key: 'other-key-0123456789a', tenant: 'other', roles: ['orchestrator'] }
    ]
  }
  const { app } = await buildTestApp(t, { keysDoc })
  const acme = { authorization: 'Bearer acme-key-0123456789ab' }
  const other = { authorization: 'Bearer other-key-0123456789a' }
  t.equal((await post(app, '/v1/runs', { runId: 'owned' }, acme)).status, 201)
  isProblem(t, await get(app, '/v1/runs/owned', other), 404, 'run_not_found')
  isProblem(t, await post(app, '/v1/runs/owned/cancel', {}, other), 404, 'run_not_found')
  isProblem(t, await post(app, '/v1/runs/owned/messages', { kind: 'steering' }, other), 404, 'run_not_found')
  const res = await app.inject({ method: 'DELETE', url: '/v1/runs/owned', headers: other })
  t.equal(res.statusCode, 404)
  const still = await get(app, '/v1/runs/owned', acme)
  t.equal(still.body.state, 'active', "the other tenant's attempts changed nothing")
})

t.test('a batch counts as one turn in the run counters', async (t) => {
  const { app } = shared
  await post(app, '/v1/runs', { runId: 'r-count' })
  const res = await post(app, '/v1/runs/r-count/batches', {
    calls: [{ id: 'a', name: 'look', arguments: {} }, { id: 'b', name: 'look', arguments: { x: 1 } }],
    usage: { inputTokens: 10, outputTokens: 5 }
  })
  t.equal(res.status, 200)
  await sleep(0)
  const read = await get(app, '/v1/runs/r-count')
  t.strictSame(read.body.counters, { turns: 1, toolCalls: 2, totalTokens: 15 })
})
