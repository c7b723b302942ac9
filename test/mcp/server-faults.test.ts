import t from 'tap'
import { buildTestApp, get, runBatch } from '../helper.js'
import { listedTool, startScriptedServer } from './scripted-server.js'

t.test('a session the server lost (HTTP 404) is initialised again and the call sent on it, once', async (t) => {
  const server = await startScriptedServer([listedTool('echo')])
  t.teardown(() => server.close())
  server.answer = (_name, args) => ({ result: { content: [{ type: 'text', text: String((args as { text?: string }).text) }] } })
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url }])
  t.equal((await runBatch(app, [{ id: 'a', name: 's_echo', arguments: { text: 'one' } }])).body.results[0].content, 'one')
  t.equal(server.sessions, 1)

  server.forgetSessions()
  const res = await runBatch(app, [{ id: 'b', name: 's_echo', arguments: { text: 'two' } }])
  t.equal(res.body.results[0].status, 'ok', 'the write was sent on a new session: a 404 means the server did not process it')
  t.equal(res.body.results[0].content, 'two')
  t.notMatch(res.body.results[0].content, /HTTP 404/)
  t.equal(server.sessions, 2, 'one new session')
  t.same(server.calls, ['echo', 'echo'], 'the call reached the server once on each session: the lost one never ran it')
  t.equal((await get(app, '/v1/mcp-servers/s')).body.state, 'ready')
})

t.test('a server that loses every session: the caller is told the call was not sent, never that the tool refused it', async (t) => {
  const server = await startScriptedServer([listedTool('echo')])
  t.teardown(() => server.close())
  const { app } = await buildTestApp(t, { mcpReconnect: { initialMs: 60_000, maxMs: 60_000 } })
  await app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url }])
  // Every session is forgotten as soon as it is made: after initialize and tools/list, before the call.
  server.answer = () => ({ error: { code: -1, message: 'unreachable' } })
  const forget = server.forgetSessions.bind(server)
  forget()
  const realTools = server.tools
  server.tools = new Proxy(realTools, { get (target, key, receiver) { if (key === 'length') forget(); return Reflect.get(target, key, receiver) } })
  const res = await runBatch(app, [{ id: 'b', name: 's_echo', arguments: {} }])
  const r = res.body.results[0]
  t.equal(r.status, 'error')
  t.equal(r.details.reason, 'executor_unavailable', 'not sent: a 404 is the server not knowing the session')
  t.equal(r.details.cause, 'session_lost')
  t.notMatch(r.content, /refused/)
  t.same(server.calls, [], 'no call was processed')
})

t.test('one tool whose inputSchema is not an object no longer hides the others: they are imported and it is reported', async (t) => {
  const server = await startScriptedServer([
    listedTool('good'),
    { name: 'arrayish', description: 'bad', inputSchema: { type: 'array' } },
    { name: 'noschema', description: 'bad' },
    listedTool('also_good'),
    { description: 'no name', inputSchema: { type: 'object' } }
  ])
  t.teardown(() => server.close())
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url }])
  const view = (await get(app, '/v1/mcp-servers/s')).body
  t.equal(view.state, 'ready')
  t.same(view.tools, ['s_also_good', 's_good'])
  t.match(view.lastError, /arrayish: its inputSchema is not an object schema/)
  t.match(view.lastError, /noschema: its inputSchema is not an object schema/)
  t.match(view.lastError, /a tool without a name/)
  t.equal((await runBatch(app, [{ id: 'a', name: 's_good', arguments: {} }])).body.results[0].status, 'ok')
})

t.test('server-supplied tool names of any length are bounded in lastError and in log lines', async (t) => {
  const long = 'n'.repeat(200_000)
  const many = Array.from({ length: 50 }, (_, i) => ({ name: `${long}${i}`, inputSchema: { type: 'string' } }))
  const server = await startScriptedServer([listedTool('fine'), ...many, listedTool(long)])
  t.teardown(() => server.close())
  const { app, logs } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url }])
  const view = (await get(app, '/v1/mcp-servers/s')).body
  t.same(view.tools, ['s_fine'])
  t.ok(view.lastError.length < 2000, `lastError is ${view.lastError.length} characters`)
  t.match(view.lastError, /\(200001 characters\)/, 'a long name is cut and its length said')
  t.match(view.lastError, /and \d+ more/, 'the problems past the first ten are counted')
  const longest = Math.max(...logs.map((l) => l.length))
  t.ok(longest < 4000, `the longest log line is ${longest} characters`)
})

t.test('structuredContent is checked against the outputSchema: a mismatch is an error for a read, uncertain for a write', async (t) => {
  const outputSchema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }
  const server = await startScriptedServer([listedTool('typed', { outputSchema, annotations: { readOnlyHint: true } }), listedTool('badschema', { outputSchema: { type: 'object', properties: { p: { type: 'string', pattern: '(?<=a)b' } } } })])
  t.teardown(() => server.close())
  let next: unknown = { n: 1 }
  server.answer = () => ({ result: next === 'iserror' ? { isError: true, content: [{ type: 'text', text: 'no' }] } : { content: [{ type: 'text', text: 'x' }], ...(next === undefined ? {} : { structuredContent: next }) } })
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([
    { name: 'r', transport: 'streamableHttp', url: server.url, trust: 'trusted' },
    { name: 'w', transport: 'streamableHttp', url: server.url }
  ])
  t.match((await get(app, '/v1/mcp-servers/r')).body.lastError, /badschema: \/outputSchema/, 'an outputSchema that cannot be compiled keeps the tool out, said in lastError')
  const both = async (): Promise<Array<{ status: string, details: Record<string, unknown>, content: string }>> => {
    const res = await runBatch(app, [{ id: 'r', name: 'r_typed', arguments: {} }, { id: 'w', name: 'w_typed', arguments: {} }])
    return res.body.results
  }
  t.same((await both()).map((r) => r.status), ['ok', 'ok'], 'a matching answer')
  for (const wrong of [{ n: 'one' }, {}, undefined]) {
    next = wrong
    const [read, write] = await both()
    t.equal(read!.status, 'error', JSON.stringify(wrong))
    t.equal(read!.details.reason, 'invalid_output')
    t.equal(write!.status, 'uncertain')
    t.equal(write!.details.reason, 'invalid_output')
    // Later writes in other runs are not blocked by it here: each runBatch is a run of its own.
  }
  next = 'iserror'
  t.same((await both()).map((r) => r.status), ['error', 'error'], 'an isError result is not checked: it is an error as it is')
})
