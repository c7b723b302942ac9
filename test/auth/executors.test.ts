import t from 'tap'
import { type InvalidToolError, ToolRegistry } from '../../src/tools/registry.js'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'

const schema = { type: 'object', properties: { x: { type: 'integer' } } }

t.test('an executor URL that is not plain http(s) is refused at registration with 400 invalid_tool', async (t) => {
  const { app } = await buildTestApp(t)
  const bad = [
    'ftp://127.0.0.1/tools/x',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'data:application/json,{}',
    'ws://127.0.0.1:9000/tools/x',
    'gopher://127.0.0.1:70/_x',
    'http://user:secret@127.0.0.1:9000/tools/x',
    'not a url',
    '/relative/path'
  ]
  for (const url of bad) {
    const res = await app.inject({ method: 'PUT', url: '/v1/tools/x', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ inputSchema: schema, executor: { url } }) })
    t.equal(res.statusCode, 400, url)
    t.equal(res.json().code, 'invalid_tool', url)
    t.notMatch(res.body, /secret/, `${url}: a credential is not echoed`)
  }
  t.same((await get(app, '/v1/tools')).body.tools, [], 'nothing was registered')
  for (const url of ['http://127.0.0.1:9000/tools/x', 'https://tools.example.com/x?y=1']) {
    const res = await app.inject({ method: 'PUT', url: '/v1/tools/x', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ inputSchema: schema, executor: { url } }) })
    t.ok(res.statusCode === 200 || res.statusCode === 201, url)
  }
})

t.test('with TOOLGATE_EXECUTOR_ALLOWED_ORIGINS only those exact origins may be registered', async (t) => {
  const allowed = ['http://127.0.0.1:9000', 'https://tools.example.com']
  const { app } = await buildTestApp(t, { config: { executorAllowedOrigins: allowed } })
  const cases: Array<[string, boolean]> = [
    ['http://127.0.0.1:9000/tools/x', true],
    ['https://tools.example.com/x', true],
    ['https://tools.example.com:443/x', true],
    ['http://127.0.0.1:9001/tools/x', false],
    ['http://localhost:9000/tools/x', false],
    ['https://127.0.0.1:9000/tools/x', false],
    ['http://tools.example.com/x', false],
    ['https://tools.example.com.evil.net/x', false],
    ['https://evil.net/tools.example.com', false],
    ['http://[::1]:9000/tools/x', false],
    ['http://2130706433:9000/tools/x', true] // the WHATWG parser normalises it to 127.0.0.1
  ]
  for (const [url, ok] of cases) {
    const res = await app.inject({ method: 'PUT', url: '/v1/tools/x', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ inputSchema: schema, executor: { url } }) })
    if (ok) t.ok(res.statusCode < 300, `${url} allowed`)
    else {
      t.equal(res.statusCode, 400, `${url} refused`)
      t.match(res.json().detail, /TOOLGATE_EXECUTOR_ALLOWED_ORIGINS/, `${url} says why`)
    }
  }
  const registry = new ToolRegistry({ allowedOrigins: allowed })
  const err = t.throws(() => registry.putAll([
    tool('a', 'http://127.0.0.1:9000'),
    tool('b', 'http://10.0.0.1:9000'),
    tool('c', 'file://x')
  ])) as InvalidToolError
  t.equal(err.problems.length, 2, 'a tools file lists every bad executor at once')
  t.equal(registry.size, 0, 'and registers none of them')
})

t.test('a redirect from an executor is never followed: its target is never called', async (t) => {
  const target = await startExecutor(t)
  const ex = await startExecutor(t)
  for (const code of [301, 302, 303, 307, 308]) {
    ex.on(`w${code}`, (_call, _req, reply) => reply.code(code).header('location', `${target.url}/tools/w${code}`).send({ content: 'moved' }))
  }
  ex.on('r302', (_call, _req, reply) => reply.code(302).header('location', `${target.url}/tools/r302`).send())
  const tools = [301, 302, 303, 307, 308].map((c) => tool(`w${c}`, ex.url))
  tools.push(tool('r302', ex.url, { readOnly: true }), tool('act', ex.url, { action: {} }))
  ex.on('act', (_call, _req, reply) => reply.code(307).header('location', `${target.url}/tools/act`).send())
  const { app } = await buildTestApp(t, { tools })
  t.equal((await post(app, '/v1/runs', { runId: 'r', toolExecution: 'parallel' })).status, 201)
  const res = await post(app, '/v1/runs/r/batches', { calls: tools.map((x) => ({ id: x.name, name: x.name, arguments: {} })) })
  t.equal(res.status, 200)
  for (const r of res.body.results) {
    t.not(r.status, 'ok', `${r.callId as string}: not ok`)
    t.equal(r.isError, true, `${r.callId as string}: an error`)
  }
  t.equal(ex.calls.length, tools.length, 'each call reached its executor once')
  t.equal(target.calls.length, 0, 'no redirect target was ever called')
})

t.test('an executor answer over TOOLGATE_MAX_EXECUTOR_RESPONSE_BYTES is not read whole: a write is uncertain, a read an error', async (t) => {
  const ex = await startExecutor(t)
  const big = { content: 'x'.repeat(5000) }
  for (const name of ['wDeclared', 'rDeclared', 'act']) ex.on(name, () => big)
  // Without a content-length: the cap must hold while reading a stream.
  for (const name of ['wStreamed', 'rStreamed']) {
    ex.on(name, (_call, _req, reply) => {
      reply.raw.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' })
      reply.raw.write('{"content":"')
      for (let i = 0; i < 20; i++) reply.raw.write('y'.repeat(500))
      reply.raw.end('"}')
      return reply
    })
  }
  ex.on('small', () => ({ content: 'fits' }))
  const tools = [
    tool('wDeclared', ex.url),
    tool('wStreamed', ex.url),
    tool('rDeclared', ex.url, { readOnly: true }),
    tool('rStreamed', ex.url, { readOnly: true }),
    tool('act', ex.url, { action: {} }),
    tool('small', ex.url, { readOnly: true })
  ]
  const { app } = await buildTestApp(t, { tools, config: { maxExecutorResponseBytes: 1024 } })
  t.equal((await post(app, '/v1/runs', { runId: 'r', toolExecution: 'parallel' })).status, 201)
  const res = await post(app, '/v1/runs/r/batches', { calls: tools.map((x) => ({ id: x.name, name: x.name, arguments: {} })) })
  t.equal(res.status, 200)
  type Result = { status: string, content: string, details: { receipt: { status: string } } }
  const by = Object.fromEntries(res.body.results.map((r: { callId: string }) => [r.callId, r])) as Record<string, Result>
  t.equal(by.wDeclared!.status, 'uncertain')
  t.equal(by.wStreamed!.status, 'uncertain')
  t.equal(by.rDeclared!.status, 'error')
  t.equal(by.rStreamed!.status, 'error')
  t.equal(by.act!.status, 'uncertain')
  t.equal(by.act!.details.receipt.status, 'uncertain', "the action's receipt says uncertain")
  t.equal(by.small!.status, 'ok')
  t.equal(by.small!.content, 'fits')
  for (const r of res.body.results) t.notMatch(r.content, /xxxxx|yyyyy/, `${r.callId as string}: none of the oversized answer reaches the model`)
})
