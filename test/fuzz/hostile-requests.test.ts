/**
 * Hostile requests, generated: malformed JSON, wrong types, huge and deep
 * values, prototype-pollution keys, invalid unicode and odd headers, to every
 * route of one app. Never a 5xx, never a crash, a refused request changes no
 * state, and no prototype is ever polluted.
 */
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, startExecutor, tool, type TestExecutor } from '../helper.js'
import type { ToolDefinition } from '../../src/model/tool.js'
import { runs, seeded } from '../seed.js'

// Bounded work, not a deadline: room for a loaded 2-core machine beyond tap's 120 s default.
t.setTimeout(300_000)

const KEY = 'fuzz-all-roles-key-0123456789'
const OTHER = 'fuzz-other-tenant-key-012345'
const keysDoc = {
  keys: [
    { key: KEY, tenant: 'fuzz', roles: ['orchestrator', 'admin', 'operator'], scopes: ['world:write'] },
    { key: OTHER, tenant: 'other', roles: ['orchestrator'] }
  ]
}
const BODY_LIMIT = 64 * 1024
/** No request may take this long: a hang is a failure, not a slow test. */
const HANG_MS = 10_000
/** Generated requests per property, five properties: the suite's counts, the full ones with TOOLGATE_TEST_RUNS=full (test/seed.ts). */
const RUNS = { raw: runs(600, 2500), batch: runs(750, 3000), tool: runs(150, 500), edges: runs(600, 2500), runs: runs(400, 1500) }
const REQUESTS = Object.values(RUNS).reduce((a, b) => a + b)

// ---------- generators ----------

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 })
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c))
const POLLUTERS = ['__proto__', 'constructor', 'prototype', 'polluted', 'toString', 'valueOf', 'hasOwnProperty', 'isAdmin']
const nasty = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.constantFrom(...POLLUTERS, '', ' ', '..', '%00', '\u0000', '\u202e', 'null', 'NaN', '-1', '1e309', 'look', 'poke', 'build', 'r1'),
  loneSurrogate,
  fc.tuple(printable, loneSurrogate, printable).map((p) => p.join('')),
  fc.integer({ min: 100, max: 3000 }).map((n) => 'a'.repeat(n))
)
const scalar = fc.oneof(
  nasty,
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(1e308, -0, 2 ** 53 + 1, -(2 ** 63), 0.1),
  fc.boolean(),
  fc.constant(null)
)

/** A JSON tree kept as entries, so that "__proto__" stays a plain key when written out. */
type Tree = { o: Array<[string, Tree]> } | { a: Tree[] } | { s: unknown }
const key = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...POLLUTERS, 'x', 'y', 'k', 'calls', 'id', 'name', 'arguments') }, { weight: 2, arbitrary: nasty })
const { tree } = fc.letrec<{ tree: Tree, obj: Tree, arr: Tree }>((tie) => ({
  tree: fc.oneof({ depthSize: 'small', maxDepth: 6 }, scalar.map((s) => ({ s })), tie('obj'), tie('arr')),
  obj: fc.array(fc.tuple(key, tie('tree')), { maxLength: 5 }).map((o) => ({ o })),
  arr: fc.array(tie('tree'), { maxLength: 5 }).map((a) => ({ a }))
}))
function write (node: Tree): string {
  if ('o' in node) return `{${node.o.map(([k, v]) => `${JSON.stringify(k)}:${write(v)}`).join(',')}}`
  if ('a' in node) return `[${node.a.map(write).join(',')}]`
  return JSON.stringify(node.s)
}
const hostileJson = tree.map(write)
/** Nesting far past 64 levels, in objects or arrays. */
const deepJson = fc.tuple(fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 60, max: 1000 }) }, { weight: 1, arbitrary: fc.constant(20_000) }), fc.boolean()).map(([d, arrays]) =>
  arrays ? `${'['.repeat(d)}1${']'.repeat(d)}` : `${'{"x":'.repeat(d)}1${'}'.repeat(d)}`)
const hugeJson = fc.integer({ min: 1000, max: BODY_LIMIT * 2 }).map((n) => JSON.stringify({ calls: [{ id: 'a', name: 'look', arguments: { k: 'x'.repeat(n) } }] }))
/** Text with a lone surrogate written as a JSON escape: valid JSON, invalid unicode. */
const escapedSurrogate = fc.constantFrom('\\ud800', '\\udfff', '\\ud83d', '\\ud83d\\u0041', '\\u0000').map((esc) =>
  `{"calls":[{"id":"a${esc}","name":"look${esc}","arguments":"{\\"k\\":\\"${esc}\\"}"}],"batchId":"b"}`)
/** Bytes that are not UTF-8, inside otherwise valid JSON. */
const badUtf8 = fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.concat([
  Buffer.from('{"calls":[{"id":"a","name":"look","arguments":"{\\"k\\":\\"'), Buffer.from(bytes), Buffer.from('\\"}"}]}')
]))
const truncated = fc.tuple(hostileJson, fc.nat()).map(([text, cut]) => text.slice(0, text.length === 0 ? 0 : cut % text.length))
const rawBody: fc.Arbitrary<string | Buffer> = fc.oneof(
  { weight: 3, arbitrary: hostileJson }, { weight: 2, arbitrary: deepJson }, hugeJson, escapedSurrogate, badUtf8, { weight: 2, arbitrary: truncated },
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom('', ' ', 'null', '[]', '""', '0', 'true', '{}', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}',
    '{"a":1,"a":2}', '{"calls":NaN}', '{"calls":[],}', "{'calls':[]}", '\ufeff{"calls":[]}', '{"calls":[]}garbage')
)

const anyArguments = fc.oneof(
  hostileJson.map((text) => ({ raw: text })), // as an object or any value
  hostileJson.map((text) => ({ str: text })), // as a JSON string
  fc.constantFrom(...['{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}', '"{\\"x\\":1}"', '', '   ', '{"x":"5"}'].map((str) => ({ str }))),
  // As a JSON string, 1e400 still reaches preparation as Infinity: a known bug, tested apart (test/server/limits.test.ts).
  fc.constant({ raw: '{"x":1e400}' }),
  deepJson.map((text) => ({ raw: `{"d":${text}}` })),
  deepJson.map((text) => ({ str: `{"d":${text}}` }))
)
/** Arguments a tool takes: so that enough calls get through to exercise dispatch too. */
const fineArguments = fc.record({ x: fc.integer({ min: -5, max: 5 }), k: fc.oneof(fc.string({ maxLength: 8 }), nasty) }, { requiredKeys: [] })
  .map((a) => (Math.abs(a.x ?? 0) % 2 === 0 ? { raw: JSON.stringify(a) } : { str: JSON.stringify(a) }))
const call = fc.record({
  id: fc.oneof({ weight: 4, arbitrary: fc.uuid() }, { weight: 1, arbitrary: fc.constantFrom('a', 'b') }, { weight: 1, arbitrary: nasty }),
  name: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('look', 'poke', 'build') }, { weight: 1, arbitrary: fc.constantFrom('LOOK', 'look ') }, { weight: 1, arbitrary: nasty }),
  args: fc.option(fc.oneof({ weight: 2, arbitrary: fineArguments }, { weight: 3, arbitrary: anyArguments }))
})
function writeCall (c: { id: string, name: string, args: { raw: string } | { str: string } | null }): string {
  const args = c.args === null ? '' : `,"arguments":${'raw' in c.args ? c.args.raw : JSON.stringify(c.args.str)}`
  return `{"id":${JSON.stringify(c.id)},"name":${JSON.stringify(c.name)}${args}}`
}
const batchBody = fc.record({
  calls: fc.array(call, { maxLength: 20 }),
  batchId: fc.option(fc.oneof(fc.constantFrom('b1', 'b2', 'b3'), fc.uuid(), nasty), { freq: 1 }),
  usage: fc.option(fc.oneof(hostileJson, fc.constant('{"inputTokens":1,"outputTokens":2}'), fc.constant('{"inputTokens":-1}')), { freq: 1 })
}).map(({ calls, batchId, usage }) => {
  const parts = [`"calls":[${calls.map(writeCall).join(',')}]`]
  if (batchId !== null) parts.push(`"batchId":${JSON.stringify(batchId)}`)
  if (usage !== null) parts.push(`"usage":${usage}`)
  return `{${parts.join(',')}}`
})

const toolBody = (executorUrl: string): fc.Arbitrary<string> => fc.record({
  inputSchema: fc.oneof(
    hostileJson,
    fc.constantFrom('{"type":"object"}', '{"$ref":"http://127.0.0.1:1/schema.json"}', '{"type":"object","properties":{"x":{"pattern":"(a+)+$"}}}',
      '{"type":"nonsense"}', '{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}', '{"__proto__":{"type":"object"}}', '{"format":"no-such-format"}')
  ),
  url: fc.oneof(fc.constantFrom(`${executorUrl}/tools/x`, 'file:///etc/passwd', 'javascript:alert(1)', 'ftp://x/y', 'http://u:p@127.0.0.1/x', 'http://[::1', ''), nasty),
  extra: fc.array(fc.tuple(fc.constantFrom('conflictKey', 'rewrite', 'action', 'aliases', 'argumentAliases', 'readOnly', 'execution', 'requiredScopes', 'name', ...POLLUTERS), hostileJson), { maxLength: 3 })
}).map(({ inputSchema, url, extra }) => {
  const parts = [`"inputSchema":${inputSchema}`, `"executor":{"url":${JSON.stringify(url)}}`, ...extra.map(([k, v]) => `${JSON.stringify(k)}:${v}`)]
  return `{${parts.join(',')}}`
})

const runBody = fc.record({
  runId: fc.option(fc.oneof(nasty, fc.constantFrom('r1', 'r2'))),
  fields: fc.array(fc.tuple(fc.constantFrom('toolExecution', 'maxConcurrentTools', 'limits', 'tools', 'events', 'metadata', 'kind', ...POLLUTERS), hostileJson), { maxLength: 4 })
}).map(({ runId, fields }) => {
  const parts = fields.map(([k, v]) => `${JSON.stringify(k)}:${v}`)
  if (runId !== null) parts.push(`"runId":${JSON.stringify(runId)}`)
  return `{${parts.join(',')}}`
})

const authorization = fc.oneof(
  { weight: 6, arbitrary: fc.constant(`Bearer ${KEY}`) },
  { weight: 1, arbitrary: fc.constantFrom(undefined, `Bearer ${OTHER}`, 'Bearer', 'Bearer ', `bearer ${KEY}`, `Basic ${Buffer.from(`x:${KEY}`).toString('base64')}`, `Bearer ${KEY} extra`, `Bearer ${'k'.repeat(5000)}`, KEY) },
  { weight: 1, arbitrary: printable.map((s) => `Bearer ${s}`) }
)
const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  { weight: 2, arbitrary: fc.constantFrom(undefined, 'application/json; charset=utf-8', 'application/json; charset=latin1', 'application/json; charset=utf-16',
    'APPLICATION/JSON', 'application/json ; charset=UTF-8', 'application/problem+json', 'application/vnd.api+json', 'text/plain',
    'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '', 'application/jsonx', 'json', '*/*', 'application/json, text/html', 'text/event-stream') },
  { weight: 1, arbitrary: printable }
)
const idempotencyKey = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom('b1', 'b2', '', ' ', 'a'.repeat(129), '__proto__', 'x y', 'b1,b2'), printable) }
)
const accept = fc.constantFrom(undefined, undefined, undefined, 'application/json', 'text/event-stream', '*/*', 'text/html', 'text/event-stream;q=0')

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS' | 'HEAD'
const ROUTES: Array<[Method, string]> = [
  ['GET', '/v1/tools'], ['GET', '/v1/tools/:tool'], ['PUT', '/v1/tools/:tool'], ['DELETE', '/v1/tools/:tool'],
  ['POST', '/v1/runs'], ['GET', '/v1/runs/:run'], ['DELETE', '/v1/runs/:run'], ['GET', '/v1/runs/:run/tools'],
  ['POST', '/v1/runs/:run/messages'], ['POST', '/v1/runs/:run/cancel'], ['GET', '/v1/runs/:run/summary'],
  ['POST', '/v1/runs/:run/batches'], ['GET', '/v1/runs/:run/receipts'], ['GET', '/v1/receipts/:op'],
  ['GET', '/v1/summary'], ['GET', '/healthz'], ['GET', '/readyz'], ['GET', '/metrics']
]
/** The live run's id, put in by the runner (it changes when a request ends the run). */
const CURRENT = '\u0001current'
const runParam = fc.oneof({ weight: 3, arbitrary: fc.constant(CURRENT) }, { weight: 2, arbitrary: nasty })
const toolParam = fc.oneof(fc.constantFrom('look', 'poke', 'build', 'fresh'), nasty)
const opParam = fc.oneof(fc.constant('op_x'), nasty)
/** A path segment: raw when it is safe to be, otherwise percent-encoded; a lone surrogate becomes the bytes no UTF-8 decoder accepts. */
function segment (value: string, raw: boolean): string {
  if (raw && /^[A-Za-z0-9._~:@!$&'()*+,;=-]*$/.test(value)) return value
  let out = ''
  for (const ch of value) {
    const code = ch.codePointAt(0)!
    if (code >= 0xd800 && code <= 0xdfff) out += `%${(0xe0 | (code >> 12)).toString(16)}%${(0x80 | ((code >> 6) & 0x3f)).toString(16)}%${(0x80 | (code & 0x3f)).toString(16)}`.toUpperCase()
    else out += encodeURIComponent(ch)
  }
  return out
}

// ---------- the harness ----------

interface Req { method: Method, url: string, headers: Record<string, string>, body?: string | Buffer }

interface Harness {
  app: FastifyInstance
  /** Log lines (errors only): the first place to look when an invariant breaks. */
  logs: string[]
  ex: TestExecutor
  runId: string
  sent: number
  slowest: { ms: number, what: string }
  refused: number
  accepted: number
}

const TOOLS = (url: string): ToolDefinition[] => [
  tool('look', url, { readOnly: true }),
  tool('poke', url, { conflictKey: 'k:{/x}', requiredScopes: ['world:write'] }),
  tool('build', url, { action: { projection: "{ 'status': receipt.status }" } })
]

const PROTO_NAMES = Object.getOwnPropertyNames(Object.prototype).sort().join()
const ARRAY_PROTO_NAMES = Object.getOwnPropertyNames(Array.prototype).sort().join()

function assertUnpolluted (): void {
  const probe = {} as Record<string, unknown>
  if (Object.getOwnPropertyNames(Object.prototype).sort().join() !== PROTO_NAMES) throw new Error('Object.prototype was polluted')
  if (Object.getOwnPropertyNames(Array.prototype).sort().join() !== ARRAY_PROTO_NAMES) throw new Error('Array.prototype was polluted')
  for (const name of ['polluted', 'isAdmin', 'x', 'k', 'type']) if (probe[name] !== undefined) throw new Error(`{}.${name} is defined`)
}

/** Everything a refused request must leave as it was. */
async function snapshot (h: Harness): Promise<string> {
  const { store, tools } = h.app.services
  const run = await store.getRun(h.runId)
  // lastActiveAt is when the run was last touched, not state (the tenant test covers it).
  const runState = run === undefined ? null : { ...run, lastActiveAt: 0 }
  const receipts = await store.listReceipts(h.runId)
  const { total } = await store.countRuns()
  return JSON.stringify([runState, tools.list().map((x) => x.definition), receipts.length, total, h.ex.calls.length])
}

async function newRun (h: Harness): Promise<void> {
  h.runId = `fuzz-run-${h.accepted}-${h.refused}`
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ runId: h.runId, toolExecution: 'parallel', limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0, cycleAdvisoryRepetitions: 0, cycleTerminationRepetitions: 0, consecutiveErrorAdvisory: 0, consecutiveErrorTermination: 0, noProgressAdvisory: 0, noProgressTermination: 0 } })
  })
  if (res.statusCode !== 201) throw new Error(`setup: run creation failed: ${res.body}`)
}

/** Sends one request and checks every invariant; throws (a counterexample) on a breach. */
async function fire (h: Harness, req: Req): Promise<void> {
  const url = req.url.split(encodeURIComponent(CURRENT)).join(h.runId).split(CURRENT).join(h.runId)
  const before = await snapshot(h)
  const t0 = performance.now()
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${req.method} ${url} did not answer within ${HANG_MS} ms`)), HANG_MS)
  })
  const res = await Promise.race([h.app.inject({ method: req.method, url, headers: req.headers, ...(req.body === undefined ? {} : { payload: req.body }) }), hung])
  clearTimeout(timer)
  const ms = performance.now() - t0
  if (ms > h.slowest.ms) h.slowest = { ms, what: `${req.method} ${url.slice(0, 80)} -> ${res.statusCode}` }
  h.sent++
  assertUnpolluted()
  if (res.statusCode >= 500) throw new Error(`${req.method} ${url} answered ${res.statusCode}: ${res.body.slice(0, 500)}; last log: ${(h.logs.at(-1) ?? '').slice(0, 1500)}`)
  const type = String(res.headers['content-type'] ?? '')
  const streamError = type.startsWith('text/event-stream') ? /event: error\ndata: (.*)/.exec(res.body) : null
  if (streamError !== null) throw new Error(`${url}: the stream ended with an error: ${streamError[1]!.slice(0, 500)}; last log: ${(h.logs.at(-1) ?? '').slice(0, 1500)}`)
  if (res.statusCode >= 400) {
    h.refused++
    if (req.method !== 'HEAD') {
      if (!type.startsWith('application/problem+json')) throw new Error(`${req.method} ${url} ${res.statusCode}: not a problem (${type})`)
      const code = (res.json() as { code?: unknown }).code
      if (typeof code !== 'string' || code === 'internal_error') throw new Error(`${url}: problem without a stable code`)
    }
    const after = await snapshot(h)
    if (after !== before) throw new Error(`${req.method} ${url} was refused with ${res.statusCode} but changed state:\n${before}\n${after}`)
    return
  }
  h.accepted++
  // An accepted request may end the run or replace a tool: start again from a known place.
  const run = await h.app.services.store.getRun(h.runId)
  if (run === undefined || run.state !== 'active') await newRun(h)
  const names = new Set(h.app.services.tools.list().map((x) => x.name))
  if (!['look', 'poke', 'build'].every((n) => names.has(n)) || h.app.services.tools.get('look')?.definition.executor.url !== `${h.ex.url}/tools/look`) {
    h.app.services.tools.putAll(TOOLS(h.ex.url))
  }
}

/** Runs one property and says how long it took: the fuzz has a budget. */
async function timed (h: Harness, t: { comment: (m: string) => void }, property: () => Promise<void>): Promise<void> {
  const [t0, sent] = [performance.now(), h.sent]
  await property()
  t.comment(`${h.sent - sent} requests in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
}

function headersOf (auth: string | undefined, type: string | undefined, idem?: string, acc?: string): Record<string, string> {
  const headers: Record<string, string> = {}
  if (auth !== undefined) headers.authorization = auth
  if (type !== undefined) headers['content-type'] = type
  if (idem !== undefined) headers['idempotency-key'] = idem
  if (acc !== undefined) headers.accept = acc
  return headers
}

t.test('generated hostile requests never get a 5xx, never crash, change nothing when refused, and pollute no prototype', async (t) => {
  const ex = await startExecutor(t)
  const { app, logs } = await buildTestApp(t, { keysDoc, config: { bodyLimitBytes: BODY_LIMIT, maxCallsPerBatch: 16, logLevel: 'error' }, tools: TOOLS(ex.url) })
  const h: Harness = { app, logs, ex, runId: '', sent: 0, slowest: { ms: 0, what: '' }, refused: 0, accepted: 0 }
  await newRun(h)
  // A counterexample can be megabytes of nesting: report it cut short.
  const reporter = (details: fc.RunDetails<unknown>): void => {
    if (!details.failed) return
    const example = JSON.stringify(details.counterexample, (_k, v: unknown) => (Buffer.isBuffer(v) ? `<${v.length} bytes>` : v)) ?? ''
    const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)
    throw new Error(`seed ${details.seed}, path ${details.counterexamplePath ?? ''}: ${cause.slice(0, 2000)}\ncounterexample: ${example.slice(0, 2000)}${example.length > 2000 ? '…' : ''}`)
  }
  const base = seeded<unknown>(t, { endOnFailure: true, asyncReporter: async (d) => reporter(d) })
  const params = (numRuns: number): fc.Parameters<unknown> => ({ ...base, numRuns })

  // 1. Raw bodies of every kind, to every route.
  await timed(h, t, async () => fc.assert(fc.asyncProperty(fc.constantFrom(...ROUTES), runParam, toolParam, opParam, rawBody, authorization, contentType, async ([method, path], run, tl, op, body, auth, type) => {
    const url = path.replace(':run', segment(run, false)).replace(':tool', segment(tl, false)).replace(':op', segment(op, false))
    await fire(h, { method, url, headers: headersOf(auth, type), body })
  }), params(RUNS.raw)))

  // 2. Batch bodies shaped right, with hostile calls, arguments and headers.
  await timed(h, t, async () => fc.assert(fc.asyncProperty(runParam, batchBody, authorization, contentType, idempotencyKey, accept, async (run, body, auth, type, idem, acc) => {
    await fire(h, { method: 'POST', url: `/v1/runs/${segment(run, false)}/batches`, headers: headersOf(auth, type, idem, acc), body })
  }), params(RUNS.batch)))

  // 3. Tool definitions: hostile schemas, executor URLs and fields.
  await timed(h, t, async () => fc.assert(fc.asyncProperty(fc.constantFrom('fresh', 'other'), toolBody(ex.url), authorization, async (name, body, auth) => {
    await fire(h, { method: 'PUT', url: `/v1/tools/${name}`, headers: headersOf(auth, 'application/json'), body })
  }), params(RUNS.tool)))

  // 4. Methods, paths, query strings and headers at the edges.
  const query = fc.constantFrom('', '?__proto__[polluted]=1', '?constructor[prototype][polluted]=1', '?a=1&a=2', '?%ZZ', `?${'q'.repeat(5000)}=1`, '?x=%ud800')
  await timed(h, t, async () => fc.assert(fc.asyncProperty(
    fc.constantFrom<Method>('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'), fc.constantFrom(...ROUTES), runParam, toolParam, fc.boolean(), query,
    authorization, contentType, idempotencyKey, accept, fc.option(hostileJson),
    async (method, [, path], run, tl, raw, q, auth, type, idem, acc, body) => {
      const url = path.replace(':run', segment(run, raw)).replace(':tool', segment(tl, raw)).replace(':op', segment(tl, raw)) + q
      await fire(h, { method, url, headers: headersOf(auth, type, idem, acc), ...(body === null || method === 'GET' || method === 'HEAD' ? {} : { body }) })
    }), params(RUNS.edges)))

  // 5. Run creation and messages with hostile options.
  await timed(h, t, async () => fc.assert(fc.asyncProperty(fc.constantFrom('/v1/runs', `/v1/runs/${CURRENT}/messages`), runBody, authorization, async (url, body, auth) => {
    await fire(h, { method: 'POST', url, headers: headersOf(auth, 'application/json'), body })
  }), params(RUNS.runs)))

  t.comment(`${h.sent} requests: ${h.refused} refused, ${h.accepted} accepted; ${ex.calls.length} calls reached the executor`)
  t.comment(`slowest: ${h.slowest.what} in ${h.slowest.ms.toFixed(0)} ms`)
  t.ok(h.sent >= REQUESTS, `at least ${REQUESTS} hostile requests were sent (${h.sent})`)
  t.ok(h.refused > h.sent / 2, 'most were refused')
  t.ok(h.accepted > 100, 'and some were accepted, so acceptance paths were exercised too')
  t.ok(ex.calls.length > 0, 'some reached the executor')
  t.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the service is alive at the end')
  t.equal(app.services.engine.inFlight, 0, 'no batch is left in flight')
  assertUnpolluted()
})
