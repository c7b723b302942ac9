import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, get, post, sleep, startExecutor, tool, type TestExecutor, holdCalls } from '../helper.js'
import type { ToolDefinition } from '../../src/model/tool.js'
import type { BatchResponse } from '../../src/model/result.js'

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

interface Fixture { app: FastifyInstance, ex: TestExecutor }

async function setup (t: Test, defs: (url: string) => ToolDefinition[], opts: { keysDoc?: unknown } = {}): Promise<Fixture> {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: defs(ex.url), ...(opts.keysDoc === undefined ? {} : { keysDoc: opts.keysDoc }) })
  return { app, ex }
}

/** Sends one batch on a fresh run and answers the response body. */
async function batch (app: FastifyInstance, calls: unknown[], runOptions: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<BatchResponse> {
  const run = await post(app, '/v1/runs', runOptions, headers)
  if (run.status !== 201) throw new Error(`run creation failed: ${JSON.stringify(run.body)}`)
  const res = await post(app, `/v1/runs/${run.body.runId}/batches`, { calls }, headers)
  if (res.status !== 200) throw new Error(`batch failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as BatchResponse
}

/** The arguments the executor received, by call id. */
function received (ex: TestExecutor): Record<string, unknown> {
  return Object.fromEntries(ex.calls.map((c) => [c.callId, c.arguments]))
}

/** A rejection's content: short JSON with a code and a message, no stack trace. */
function modelReadable (t: Test, content: string, reason: string): void {
  t.ok(content.length < 600, 'the content is short')
  let parsed: { error?: unknown, message?: unknown } | undefined
  t.doesNotThrow(() => { parsed = JSON.parse(content) }, 'the content is JSON')
  t.equal(parsed?.error, reason, 'the content names the reason')
  t.type(parsed?.message, 'string', 'and says it in a sentence')
  t.notMatch(content, /\n\s+at |Error:|\.ts:\d|\.js:\d|node_modules/, 'no stack trace')
}

t.test('arguments are read as a JSON string, an object, an empty string, JSON encoded twice, null or absent', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('look', url, { readOnly: true })])
  const body = await batch(app, [
    { id: 'string', name: 'look', arguments: '{"x": 1, "k": "a"}' },
    { id: 'object', name: 'look', arguments: { x: 2, k: 'b' } },
    { id: 'empty', name: 'look', arguments: '' },
    { id: 'blank', name: 'look', arguments: '  ' },
    { id: 'twice', name: 'look', arguments: JSON.stringify(JSON.stringify({ x: 3 })) },
    { id: 'null', name: 'look', arguments: null },
    { id: 'absent', name: 'look' }
  ])
  t.same(body.results.map((r) => r.status), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok'])
  t.strictSame(received(ex), {
    string: { x: 1, k: 'a' },
    object: { x: 2, k: 'b' },
    empty: {},
    blank: {},
    twice: { x: 3 },
    null: {},
    absent: {}
  })
})

t.test('arguments that are not a JSON object are rejected as invalid_arguments', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('look', url, { readOnly: true })])
  const body = await batch(app, [
    { id: 'broken', name: 'look', arguments: '{"x": ' },
    { id: 'array', name: 'look', arguments: '[1, 2]' },
    { id: 'number', name: 'look', arguments: '5' },
    { id: 'thrice', name: 'look', arguments: JSON.stringify(JSON.stringify(JSON.stringify({ x: 3 }))) },
    { id: 'fine', name: 'look', arguments: '{}' }
  ])
  t.same(body.results.map((r) => [r.callId, r.status, r.details.reason]),
    [['broken', 'rejected', 'invalid_arguments'], ['array', 'rejected', 'invalid_arguments'], ['number', 'rejected', 'invalid_arguments'],
      ['thrice', 'rejected', 'invalid_arguments'], ['fine', 'ok', undefined]])
  for (const r of body.results.slice(0, 4)) modelReadable(t, r.content, 'invalid_arguments')
  t.same(ex.calls.map((c) => c.callId), ['fine'])
})

t.test('a JSON string of arguments with a __proto__ key or nested past 64 levels is rejected, the other calls go on', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('look', url, { readOnly: true })])
  let deep = '{}'
  for (let i = 0; i < 70; i++) deep = `{"a": ${deep}}`
  const body = await batch(app, [
    { id: 'proto', name: 'look', arguments: '{"__proto__": {"polluted": true}}' },
    { id: 'ctor', name: 'look', arguments: '{"constructor": {"prototype": {"polluted": true}}}' },
    { id: 'deep', name: 'look', arguments: deep },
    { id: 'fine', name: 'look', arguments: '{"x": 1}' }
  ])
  t.same(body.results.map((r) => [r.callId, r.status, r.details.reason]),
    [['proto', 'rejected', 'invalid_arguments'], ['ctor', 'rejected', 'invalid_arguments'], ['deep', 'rejected', 'invalid_arguments'], ['fine', 'ok', undefined]])
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype was polluted')
  t.same(ex.calls.map((c) => c.callId), ['fine'])
})

t.test('argumentAliases, schema defaults and unambiguous coercion shape what the executor receives', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('build', url, {
    inputSchema: {
      type: 'object',
      properties: {
        kind: { type: 'string' },
        x: { type: 'integer' },
        y: { type: 'number' },
        fast: { type: 'boolean' },
        label: { type: 'string' },
        size: { type: 'integer', default: 1 },
        tags: { type: 'array', items: { type: 'integer' } }
      },
      required: ['kind', 'x'],
      additionalProperties: false
    },
    argumentAliases: { type: 'kind', xpos: 'x' }
  })])
  const body = await batch(app, [
    { id: 'a', name: 'build', arguments: { type: 'wall', xpos: '5', y: '2.5', fast: 'true', label: '7', tags: ['1', '2'] } },
    { id: 'b', name: 'build', arguments: '{"kind": "door", "x": 3, "size": 4}' },
    { id: 'c', name: 'build', arguments: { kind: 'tower', x: '5.5' } },
    { id: 'd', name: 'build', arguments: { kind: 'tower', x: 'five' } },
    { id: 'e', name: 'build', arguments: { kind: 'w', type: 'ignored', x: 1 } }
  ])
  t.same(body.results.map((r) => r.status), ['ok', 'ok', 'rejected', 'rejected', 'ok'])
  t.equal(body.results[2]?.details.reason, 'invalid_arguments', '"5.5" is not an integer')
  t.equal(body.results[3]?.details.reason, 'invalid_arguments')
  t.strictSame(received(ex), {
    a: { kind: 'wall', x: 5, y: 2.5, fast: true, label: '7', tags: [1, 2], size: 1 },
    b: { kind: 'door', x: 3, size: 4 },
    e: { kind: 'w', x: 1, size: 1 }
  }, 'aliases renamed (the real name wins), "5" became 5, a string stays a string, the default filled')
})

t.test('arguments preparation leaves alone reach the executor as the model wrote them, and repeat as one call in any key order', async (t) => {
  const schema = { type: 'object', properties: { b: { type: 'integer' }, a: { type: 'integer' } } }
  const { app, ex } = await setup(t, (url) => [
    tool('look', url, { readOnly: true, inputSchema: schema }),
    tool('peek', url, { readOnly: true, inputSchema: { ...schema, properties: { ...schema.properties, a: { type: 'integer', default: 0 } } } })
  ])
  const limits = { limits: { exactToolRepeatAdvisoryThreshold: 2 } }
  const body = await batch(app, [
    { id: 'c1', name: 'look', arguments: { b: 1, a: 2 } },
    { id: 'c2', name: 'look', arguments: { a: 2, b: 1 } },
    { id: 'c3', name: 'peek', arguments: { b: 1 } },
    { id: 'c4', name: 'peek', arguments: { a: 0, b: 1 } }
  ], limits)
  t.same(body.results.map((r) => r.status), ['ok', 'ok', 'ok', 'ok'])
  const keys = Object.fromEntries(ex.calls.map((c) => [c.callId, Object.keys(c.arguments as object)]))
  t.strictSame(keys, { c1: ['b', 'a'], c2: ['a', 'b'], c3: ['b', 'a'], c4: ['a', 'b'] }, 'key order as sent; the default filled in after')
  t.equal(body.policyMessages.length, 2, 'c2 repeats c1 (same arguments, other order); c4 repeats c3 once its default is filled')
  t.match(body.policyMessages.map((m) => m.content).join('\n'), /look[\s\S]*peek/)
  t.equal(new Set(ex.calls.map((c) => c.operationId)).size, 4, 'each call its own operation')
})

t.test('a batch sent again with the same batchId answers the stored response and dispatches nothing', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('look', url, {
    readOnly: true,
    inputSchema: { type: 'object', properties: { n: { type: 'integer', default: 9 } } }
  })])
  const run = await post(app, '/v1/runs', {})
  const calls = [{ id: 'a', name: 'look', arguments: {} }]
  const first = await post(app, `/v1/runs/${run.body.runId}/batches`, { batchId: 'b1', calls })
  const again = await post(app, `/v1/runs/${run.body.runId}/batches`, { batchId: 'b1', calls })
  t.equal(first.status, 200)
  t.equal(again.status, 200, 'the same batch id with the same calls replays')
  t.strictSame(again.body, first.body, 'the stored response is answered again')
  const raw = await app.inject({ method: 'POST', url: `/v1/runs/${run.body.runId}/batches`, payload: { batchId: 'b1', calls }, headers: { 'content-type': 'application/json' } })
  t.equal(raw.body, JSON.stringify(first.body), 'byte for byte')
  t.match(raw.headers['content-type'], /^application\/json/)
  t.equal(ex.calls.length, 1, 'nothing dispatched again')
  t.strictSame(ex.calls[0]?.arguments, { n: 9 })
})

t.test('rewrite rules (set, default, remove, clamp) are applied in order and the executor sees the result', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('build', url, {
    inputSchema: {
      type: 'object',
      properties: { x: { type: 'integer' }, y: { type: 'integer' }, mode: { type: 'string' }, secret: { type: 'string' }, opts: { type: 'object' } }
    },
    rewrite: [
      { op: 'clamp', path: '/x', min: 0, max: 255 },
      { op: 'clamp', path: '/y', min: 10 },
      { op: 'set', path: '/mode', value: 'safe' },
      { op: 'default', path: '/opts/level', value: 2 },
      { op: 'remove', path: '/secret' }
    ]
  })])
  const body = await batch(app, [
    { id: 'high', name: 'build', arguments: { x: 999, y: 3, mode: 'fast', secret: 's3cr3t' } },
    { id: 'low', name: 'build', arguments: { x: -4, y: 50, opts: { level: 7 } } },
    { id: 'none', name: 'build', arguments: {} }
  ])
  t.same(body.results.map((r) => r.status), ['ok', 'ok', 'ok'])
  t.strictSame(received(ex), {
    high: { x: 255, y: 10, mode: 'safe', opts: { level: 2 } },
    low: { x: 0, y: 50, mode: 'safe', opts: { level: 7 } },
    none: { mode: 'safe', opts: { level: 2 } }
  })
})

t.test('a rewrite that produces invalid arguments is rejected as policy_denied', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('build', url, {
    inputSchema: { type: 'object', properties: { x: { type: 'integer' } } },
    rewrite: [{ op: 'set', path: '/x', value: 'not a number' }]
  }), tool('look', url, { readOnly: true })])
  const body = await batch(app, [{ id: 'a', name: 'build', arguments: { x: 1 } }, { id: 'b', name: 'look', arguments: {} }])
  t.same(body.results.map((r) => [r.status, r.details.reason]), [['rejected', 'policy_denied'], ['ok', undefined]])
  modelReadable(t, body.results[0]!.content, 'policy_denied')
  t.same(ex.calls.map((c) => c.callId), ['b'])
})

t.test('every preparation failure is rejected with its reason; the other calls go on; results stay in source order', async (t) => {
  const keysDoc = {
    keys: [{ key: 'orch-key-0123456789abc', tenant: 'acme', roles: ['orchestrator'], scopes: ['world:read'] }]
  }
  const auth = { authorization: 'Bearer orch-key-0123456789abc' }
  const { app, ex } = await setup(t, (url) => [
    tool('look', url, { readOnly: true, requiredScopes: ['world:read'] }),
    tool('build', url, { conflictKey: 'tile:{/x}:{/y}', requiredScopes: ['world:read'] }),
    tool('nuke', url, { requiredScopes: ['world:write'] }),
    tool('hidden', url, { readOnly: true }),
    tool('typed', url, { inputSchema: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] } })
  ], { keysDoc })
  const body = await batch(app, [
    { id: 'c1', name: 'look', arguments: { x: 1 } },
    { id: 'c2', name: 'nosuch', arguments: {} },
    { id: 'c3', name: 'build', arguments: { x: 1 } },
    { id: 'c4', name: 'typed', arguments: { x: 'one' } },
    { id: 'c5', name: 'hidden', arguments: {} },
    { id: 'c6', name: 'nuke', arguments: {} },
    { id: 'c7', name: 'typed', arguments: {} },
    { id: 'c8', name: 'build', arguments: { x: 1, y: 2 } }
  ], { tools: ['look', 'build', 'nuke', 'typed'] }, auth)
  t.same(body.results.map((r) => [r.callId, r.status, r.details.reason]), [
    ['c1', 'ok', undefined],
    ['c2', 'rejected', 'unknown_tool'],
    ['c3', 'rejected', 'conflict_key_unresolved'],
    ['c4', 'rejected', 'invalid_arguments'],
    ['c5', 'rejected', 'tool_not_allowed'],
    ['c6', 'rejected', 'unauthorized'],
    ['c7', 'rejected', 'invalid_arguments'],
    ['c8', 'ok', undefined]
  ])
  for (const r of body.results.filter((r) => r.status === 'rejected')) {
    t.equal(r.isError, true, `${r.callId} isError`)
    modelReadable(t, r.content, r.details.reason ?? '')
  }
  t.match(body.results[5]?.content, /world:write/, 'the unauthorized call names the missing scope')
  t.same(ex.calls.map((c) => c.callId), ['c1', 'c8'], 'only the prepared calls reached their executors')
  t.equal(body.continue, true)
  t.equal(body.run.state, 'active')
})

t.test('a rejection never repeats argument values in its content', async (t) => {
  const { app } = await setup(t, (url) => [tool('typed', url, { inputSchema: { type: 'object', properties: { x: { type: 'integer' } }, additionalProperties: false } })])
  const body = await batch(app, [
    { id: 'a', name: 'typed', arguments: { x: 'SECRET-VALUE-1' } },
    { id: 'b', name: 'typed', arguments: '{"x": "SECRET-VALUE-2", ' }
  ])
  for (const r of body.results) {
    t.equal(r.status, 'rejected')
    t.notMatch(r.content, /SECRET-VALUE/)
    t.notMatch(JSON.stringify(r.details), /SECRET-VALUE/)
  }
})

t.test('results come back in source order whatever order the calls finished in', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('look', url, { readOnly: true })])
  const done: string[] = []
  ex.on('look', async (call) => {
    await sleep(call.arguments.x as number)
    done.push(call.callId)
    return { content: call.callId }
  })
  const body = await batch(app, [
    { id: 'slow', name: 'look', arguments: { x: 120 } },
    { id: 'mid', name: 'look', arguments: { x: 60 } },
    { id: 'fast', name: 'look', arguments: { x: 0 } }
  ])
  t.same(done, ['fast', 'mid', 'slow'], 'they finished in reverse')
  t.same(body.results.map((r) => [r.callId, r.content]), [['slow', 'slow'], ['mid', 'mid'], ['fast', 'fast']])
})

t.test('a second batch while one is in flight answers 409 run_busy and changes nothing', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('slow', url, { readOnly: true }), tool('look', url, { readOnly: true })])
  const { started: isStarted, release } = holdCalls(ex, 'slow')
  await post(app, '/v1/runs', { runId: 'busy' })
  const first = post(app, '/v1/runs/busy/batches', { batchId: 'one', calls: [{ id: 'a', name: 'slow', arguments: {} }] })
  await isStarted
  const second = await post(app, '/v1/runs/busy/batches', { batchId: 'two', calls: [{ id: 'b', name: 'look', arguments: {} }] })
  t.equal(second.status, 409)
  t.match(String(second.headers['content-type']), /^application\/problem\+json/)
  t.equal(second.body.code, 'run_busy')
  const during = await get(app, '/v1/runs/busy')
  t.equal(during.body.counters.turns, 1, 'the refused batch is not a turn')
  release()
  const res = await first
  t.equal(res.status, 200)
  t.same(ex.calls.map((c) => c.callId), ['a'], 'the refused batch dispatched nothing')
  const later = await post(app, '/v1/runs/busy/batches', { batchId: 'two', calls: [{ id: 'b', name: 'look', arguments: {} }] })
  t.equal(later.status, 200, 'the refused batch id is free once the first batch is done')
  t.equal(later.body.turn, 2)
})

t.test('the executor receives exactly {runId, batchId, callId, tool, arguments, operationId, deadline} with Idempotency-Key and JSON', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('build', url, { aliases: ['make'] })])
  const headers: Array<Record<string, unknown>> = []
  ex.on('build', (_call, req) => {
    headers.push({ ...req.headers })
    return { content: 'ok' }
  })
  await post(app, '/v1/runs', { runId: 'r-body' })
  const before = Date.now()
  const res = await post(app, '/v1/runs/r-body/batches', { batchId: 'b-1', calls: [{ id: 'call_1', name: 'make', arguments: '{"x": 1}' }] })
  t.equal(res.status, 200)
  t.equal(ex.calls.length, 1)
  const call = ex.calls[0]!
  t.strictSame(Object.keys(call.body).sort(), ['arguments', 'batchId', 'callId', 'deadline', 'operationId', 'runId', 'tool'])
  t.equal(call.body.runId, 'r-body')
  t.equal(call.body.batchId, 'b-1')
  t.equal(call.body.callId, 'call_1')
  t.equal(call.body.tool, 'build', 'the canonical name, not the alias')
  t.strictSame(call.body.arguments, { x: 1 })
  t.type(call.body.operationId, 'string')
  t.ok((call.body.operationId as string).length > 0)
  t.match(call.body.deadline, ISO)
  const deadline = Date.parse(call.body.deadline as string)
  t.ok(deadline > before && deadline <= Date.now() + 5000 + 1000, 'the deadline is about the tool timeout from now')
  t.equal(call.idempotencyKey, call.body.operationId, 'Idempotency-Key is the operationId')
  t.match(String(headers[0]?.['content-type']), /^application\/json/)
  t.equal(call.path, '/tools/build')
  t.equal(res.body.results[0].details.operationId, call.body.operationId, 'the result names the operation')
})

t.test('the batch id comes from the body, else the Idempotency-Key header, else it is generated', async (t) => {
  const { app } = await setup(t, (url) => [tool('look', url, { readOnly: true })])
  await post(app, '/v1/runs', { runId: 'ids' })
  const calls = [{ id: 'a', name: 'look', arguments: {} }]
  const fromBody = await post(app, '/v1/runs/ids/batches', { batchId: 'from-body', calls })
  t.equal(fromBody.body.batchId, 'from-body')
  const fromHeader = await post(app, '/v1/runs/ids/batches', { calls: [{ id: 'b', name: 'look' }] }, { 'idempotency-key': 'from-header' })
  t.equal(fromHeader.body.batchId, 'from-header')
  const generated = await post(app, '/v1/runs/ids/batches', { calls: [{ id: 'c', name: 'look' }] })
  t.match(generated.body.batchId, /^[A-Za-z0-9_.:-]{1,128}$/)
  t.not(generated.body.batchId, 'from-header')
  t.same([fromBody.body.turn, fromHeader.body.turn, generated.body.turn], [1, 2, 3])
})

t.test('the same batchId with other calls answers 422 batch_id_reused and dispatches nothing', async (t) => {
  const { app, ex } = await setup(t, (url) => [tool('look', url, { readOnly: true })])
  await post(app, '/v1/runs', { runId: 'reuse' })
  t.equal((await post(app, '/v1/runs/reuse/batches', { batchId: 'b', calls: [{ id: 'a', name: 'look', arguments: { x: 1 } }] })).status, 200)
  const res = await post(app, '/v1/runs/reuse/batches', { batchId: 'b', calls: [{ id: 'a', name: 'look', arguments: { x: 2 } }] })
  t.equal(res.status, 422)
  t.equal(res.body.code, 'batch_id_reused')
  t.equal(ex.calls.length, 1)
  t.equal((await get(app, '/v1/runs/reuse')).body.counters.turns, 1)
})

t.test('an empty batch is a turn with no results', async (t) => {
  const { app } = await setup(t, (url) => [tool('look', url, { readOnly: true })])
  const body = await batch(app, [])
  t.strictSame(body.results, [])
  t.equal(body.turn, 1)
  t.equal(body.continue, true)
  t.strictSame(body.run, { state: 'active' })
  t.strictSame(body.policyMessages, [])
  t.ok(Array.isArray(body.events))
})

t.test('a batch answer has every field the SPEC names, and each result carries epoch and duration', async (t) => {
  const { app } = await setup(t, (url) => [tool('look', url, { readOnly: true })])
  const body = await batch(app, [{ id: 'a', name: 'look', arguments: {} }], { runId: 'shape' })
  t.strictSame(Object.keys(body).sort(), ['batchId', 'continue', 'events', 'policyMessages', 'results', 'run', 'runId', 'state', 'turn'])
  t.equal(body.runId, 'shape')
  const r = body.results[0]!
  t.strictSame(Object.keys(r).sort(), ['callId', 'content', 'details', 'isError', 'name', 'status'])
  t.equal(r.details.epoch, 0)
  t.type(r.details.durationMs, 'number')
  t.equal(r.content, JSON.stringify({ ok: true, tool: 'look' }), 'object content is serialized')
  t.equal(r.isError, false)
})
