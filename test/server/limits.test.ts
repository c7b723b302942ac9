import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { MAX_JSON_DEPTH } from '../../src/model/json.js'
import { jsonDepthExceeds } from '../../src/http/json-body.js'
import { buildTestApp, get, post, sleep, stalledClient, startExecutor, tool } from '../helper.js'

/** A JSON text nesting objects `depth` levels deep, the outermost included. */
function nested (depth: number, inner = '{"kind":"steering"}'): string {
  let text = inner
  for (let i = 1; i < depth; i++) text = `{"kind":"steering","x":${text}}`
  return text
}

async function runState (app: FastifyInstance, runId: string): Promise<unknown> {
  const { body } = await get(app, `/v1/runs/${runId}`)
  const { expiresAt: _e, ...rest } = body as Record<string, unknown>
  return rest
}

t.test('a body over TOOLGATE_BODY_LIMIT_BYTES is refused with 413 payload_too_large and changes nothing', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { config: { bodyLimitBytes: 2048 }, tools: [tool('poke', ex.url)] })
  t.equal((await post(app, '/v1/runs', { runId: 'r' })).status, 201)
  const before = await runState(app, 'r')
  const res = await post(app, '/v1/runs/r/batches', { calls: [{ id: 'a', name: 'poke', arguments: { k: 'x'.repeat(3000) } }] })
  t.equal(res.status, 413)
  t.equal(res.body.code, 'payload_too_large')
  const tooBigTool = await app.inject({ method: 'PUT', url: '/v1/tools/big', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ description: 'd'.repeat(4000), inputSchema: {}, executor: { url: `${ex.url}/tools/big` } }) })
  t.equal(tooBigTool.statusCode, 413)
  t.same(await runState(app, 'r'), before)
  t.equal(ex.calls.length, 0)
  t.same((await get(app, '/v1/tools')).body.tools.map((x: { name: string }) => x.name), ['poke'])
})

t.test('a batch over TOOLGATE_MAX_CALLS_PER_BATCH is refused whole with 400 and nothing is dispatched', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { config: { maxCallsPerBatch: 3 }, tools: [tool('poke', ex.url)] })
  t.equal((await post(app, '/v1/runs', { runId: 'r' })).status, 201)
  const before = await runState(app, 'r')
  const calls = (n: number): unknown[] => Array.from({ length: n }, (_, i) => ({ id: `c${i}`, name: 'poke', arguments: { x: i } }))
  const res = await post(app, '/v1/runs/r/batches', { calls: calls(4) })
  t.equal(res.status, 400)
  t.equal(res.body.code, 'invalid_request')
  t.match(res.body.detail, /at most 3 calls/)
  t.same(await runState(app, 'r'), before, 'no turn was counted')
  t.equal(ex.calls.length, 0)
  t.equal((await post(app, '/v1/runs/r/batches', { calls: calls(3) })).status, 200, 'the cap itself is allowed')
})

t.test('arguments over TOOLGATE_MAX_ARGUMENT_BYTES are rejected with reason invalid_arguments', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { config: { maxArgumentBytes: 100 }, tools: [tool('poke', ex.url)] })
  t.equal((await post(app, '/v1/runs', { runId: 'r' })).status, 201)
  const res = await post(app, '/v1/runs/r/batches', {
    calls: [
      { id: 'object', name: 'poke', arguments: { k: 'x'.repeat(200) } },
      { id: 'string', name: 'poke', arguments: JSON.stringify({ k: 'y'.repeat(200) }) },
      { id: 'fits', name: 'poke', arguments: { k: 'z'.repeat(50) } }
    ]
  })
  t.equal(res.status, 200)
  t.same(res.body.results.map((r: { status: string }) => r.status), ['rejected', 'rejected', 'ok'])
  t.equal(res.body.results[0].details.reason, 'invalid_arguments')
  t.equal(res.body.results[1].details.reason, 'invalid_arguments')
  t.same(ex.calls.map((c) => c.callId), ['fits'])
})

t.test('a body nesting deeper than 64 levels is refused with 400, however deep; 64 levels are accepted', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal((await post(app, '/v1/runs', { runId: 'r' })).status, 201)
  const send = (payload: string) => app.inject({ method: 'POST', url: '/v1/runs/r/messages', headers: { 'content-type': 'application/json' }, payload })
  t.equal((await send(nested(MAX_JSON_DEPTH))).statusCode, 200, '64 levels')
  for (const depth of [MAX_JSON_DEPTH + 1, 1000, 20_000]) {
    const res = await send(nested(depth))
    t.equal(res.statusCode, 400, `${depth} levels`)
    t.equal(res.json().code, 'invalid_request')
  }
  // Arrays count as levels too, and a deep value that is not JSON text at all.
  t.equal((await send(`{"kind":"steering","x":${'['.repeat(100)}${']'.repeat(100)}}`)).statusCode, 400)
  t.equal((await send(`{"kind":"steering","x":${'['.repeat(400_000)}${']'.repeat(400_000)}}`)).statusCode, 400, 'valid JSON 400,000 levels deep')
  t.equal((await send('['.repeat(500_000))).statusCode, 400)
  t.equal(jsonDepthExceeds({ a: [[{}]] }, 4), false)
  t.equal(jsonDepthExceeds({ a: [[{ b: 1 }]] }, 3), true)
  t.equal(jsonDepthExceeds('scalar', 0), false)
})

t.test('a body holding a number past the range of a double (1e400) is refused with 400', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('poke', ex.url)] })
  t.equal((await post(app, '/v1/runs', { runId: 'r' })).status, 201)
  for (const payload of ['{"calls":[{"id":"a","name":"poke","arguments":{"x":1e400}}]}', '{"calls":[],"usage":{"inputTokens":-1e999}}']) {
    const res = await app.inject({ method: 'POST', url: '/v1/runs/r/batches', headers: { 'content-type': 'application/json' }, payload })
    t.equal(res.statusCode, 400, payload)
    t.match(res.json().detail, /number too large/)
  }
  t.equal(ex.calls.length, 0)
})

t.test('arguments sent as a JSON string holding 1e400 are rejected with invalid_arguments, not a 500', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('poke', ex.url)] })
  t.equal((await post(app, '/v1/runs', { runId: 'r' })).status, 201)
  const res = await post(app, '/v1/runs/r/batches', { calls: [{ id: 'a', name: 'poke', arguments: '{"x":1e400}' }] })
  t.equal(res.status, 200)
  t.equal(res.body.results?.[0]?.details.reason, 'invalid_arguments')
  t.equal(ex.calls.length, 0)
})

t.test('ids as long as the SPEC allows are routed; malformed paths and overlong parameters get 400 problems', async (t) => {
  const { app } = await buildTestApp(t)
  const longest = 'r'.repeat(128)
  t.equal((await post(app, '/v1/runs', { runId: longest })).status, 201)
  t.equal((await get(app, `/v1/runs/${longest}`)).status, 200, 'a 128-character run id')
  for (const url of ['/v1/runs/%E0%A4%A', '/v1/runs/%ED%A0%80', `/v1/runs/${'r'.repeat(600)}`, `/v1/receipts/${'o'.repeat(600)}`]) {
    const res = await get(app, url)
    t.equal(res.status, 400, url.slice(0, 40))
    t.equal(res.body.code, 'invalid_request')
    t.match(String(res.headers['content-type']), /application\/problem\+json/)
  }
})

t.test('per-key rate limiting answers 429 rate_limited problems, per key, and never counts health probes', async (t) => {
  const keysDoc = {
    keys: [
      { key: 'first-key-0123456789abcdef', tenant: 'a', roles: ['orchestrator', 'operator'] },
      { key: 'second-key-0123456789abcde', tenant: 'b', roles: ['orchestrator', 'operator'] }
    ]
  }
  const { app } = await buildTestApp(t, { keysDoc, config: { rateLimitMax: 3, rateLimitWindowMs: 60_000 } })
  const first = { authorization: 'Bearer first-key-0123456789abcdef' }
  const second = { authorization: 'Bearer second-key-0123456789abcde' }
  for (let i = 0; i < 3; i++) t.equal((await get(app, '/v1/summary', first)).status, 200, `request ${i + 1} of the window`)
  const limited = await get(app, '/v1/summary', first)
  t.equal(limited.status, 429)
  t.equal(limited.body.code, 'rate_limited')
  t.match(limited.headers['content-type'], /application\/problem\+json/)
  t.ok(Number(limited.headers['retry-after']) > 0, 'says when to retry')
  const created = await post(app, '/v1/runs', {}, first)
  t.equal(created.status, 429, 'every route of the key shares its budget')
  t.equal((await get(app, '/v1/summary', second)).status, 200, 'another key has its own budget')
  for (let i = 0; i < 10; i++) {
    t.equal((await get(app, '/healthz')).status, 200)
    t.equal((await get(app, '/readyz')).status, 200)
    t.equal((await get(app, '/metrics')).status, 200)
  }
  for (let i = 0; i < 5; i++) t.equal((await get(app, '/v1/summary', { authorization: 'Bearer wrong-key-0123456789abcdef' })).status, 401, 'a wrong key is refused before counting')
  t.equal((await get(app, '/v1/summary', second)).status, 200, 'and costs no real key anything')
})

t.test('rate limiting is off with TOOLGATE_RATE_LIMIT_MAX=0', async (t) => {
  const { app } = await buildTestApp(t, { config: { rateLimitMax: 0 } })
  for (let i = 0; i < 50; i++) t.equal((await get(app, '/v1/summary')).status, 200)
  t.notOk('x-ratelimit-limit' in (await get(app, '/v1/summary')).headers)
})

t.test('when the event loop lags past TOOLGATE_MAX_EVENT_LOOP_DELAY_MS work is shed with 503 overloaded; health probes still answer', async (t) => {
  const { app } = await buildTestApp(t, { config: { maxEventLoopDelayMs: 20 }, pressureSampleIntervalMs: 50 })
  await app.ready()
  t.equal((await get(app, '/v1/summary')).status, 200, 'not shed while the loop is idle')
  let shed: Awaited<ReturnType<typeof get>> | null = null
  let probes: number[] = []
  // Lag the loop until a sample sees it; bounded, so a broken shedder fails rather than hangs.
  for (let attempt = 0; attempt < 40 && shed === null; attempt++) {
    const until = Date.now() + 120
    while (Date.now() < until) { /* block the event loop */ }
    await sleep(0)
    const res = await get(app, '/v1/summary')
    if (res.status === 503) {
      shed = res
      probes = [(await get(app, '/healthz')).status, (await get(app, '/readyz')).status, (await get(app, '/metrics')).status]
    }
  }
  t.ok(shed !== null, 'a request was shed')
  t.equal(shed?.body.code, 'overloaded')
  t.match(String(shed?.headers['content-type']), /application\/problem\+json/)
  t.ok(Number(shed?.headers['retry-after']) > 0)
  t.same(probes, [200, 200, 200], '/healthz, /readyz and /metrics are never shed')
  t.match((await get(app, '/metrics')).body, /^toolgate_shed_requests_total [1-9]/m, 'shed requests are counted')
  // Once the loop is calm again, work is taken again.
  let back = false
  for (let attempt = 0; attempt < 100 && !back; attempt++) {
    await sleep(20)
    back = (await get(app, '/v1/summary')).status === 200
  }
  t.ok(back, 'the service recovers')
})

t.test('a client that never finishes sending its request is cut off after TOOLGATE_REQUEST_TIMEOUT_MS with 408', async (t) => {
  const { app } = await buildTestApp(t, { config: { requestTimeoutMs: 300 } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  // Headers promise 100 bytes; only 10 ever come.
  const answer = await stalledClient(port, 'POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"runId":')
  t.match(answer, /^HTTP\/1\.1 408/)
  t.equal((await get(app, '/v1/runs/x')).status, 404, 'nothing was created')
})

t.test('requests time out by default: 30 s for the whole request, 10 s for its headers', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal(app.server.requestTimeout, 30_000)
  t.equal(app.server.headersTimeout, 10_000)
  const { app: headersOnly } = await buildTestApp(t, { config: { requestTimeoutMs: 0, headersTimeoutMs: 5000 } })
  t.equal(headersOnly.server.headersTimeout, 5000, 'the headers timeout stands alone when the request timeout is off')
  const { app: short } = await buildTestApp(t, { config: { requestTimeoutMs: 2000 } })
  t.equal(short.server.headersTimeout, 2000, 'and never passes the request timeout')
})

t.test('a client that sends nothing is answered 408 after TOOLGATE_HEADERS_TIMEOUT_MS and closed', async (t) => {
  const { app } = await buildTestApp(t, { config: { headersTimeoutMs: 300 } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const answers = await Promise.all(['', 'GET /v1/runs HTTP/1.1\r\nHost: x\r\nX-Slow: '].map((opening) => stalledClient(port, opening)))
  t.match(answers, [/^HTTP\/1\.1 408/, /^HTTP\/1\.1 408/], 'silent and half-sent headers alike')
})

t.test('while draining, new batches get 503 overloaded and /readyz answers 503', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('poke', ex.url)] })
  t.equal((await post(app, '/v1/runs', { runId: 'r' })).status, 201)
  app.services.draining = true
  const res = await post(app, '/v1/runs/r/batches', { calls: [{ id: 'a', name: 'poke' }] })
  t.equal(res.status, 503)
  t.equal(res.body.code, 'overloaded')
  t.equal((await get(app, '/readyz')).status, 503)
  t.match((await get(app, '/metrics')).body, /^toolgate_ready 0$/m, 'and toolgate_ready says so')
  t.equal((await get(app, '/healthz')).status, 200)
  t.equal(ex.calls.length, 0)
  t.equal((await get(app, '/v1/runs/r')).body.counters.turns, 0)
})
