import t from 'tap'
import { FakeClock } from '../clock.js'
import { buildTestApp, freePort, get, runBatch, startExecutor, tool } from '../helper.js'
import { InvalidMcpServerError } from '../../src/mcp/servers.js'
import { startFaultServer } from './fault-server.js'

const FAST_RECONNECT = { initialMs: 20, maxMs: 200 }

t.test('a server down at start does not stop the start; its tools are executor_unavailable until it comes up', async (t) => {
  const port = await freePort()
  const { app } = await buildTestApp(t, { mcpReconnect: FAST_RECONNECT })
  await app.services.mcp.startAll([{
    name: 'late',
    transport: 'streamableHttp',
    url: `http://127.0.0.1:${port}/mcp`,
    include: ['echo', 'fails'],
    tools: { echo: { readOnly: true } }
  }])
  const view = (await get(app, '/v1/mcp-servers/late')).body
  t.equal(view.state, 'down')
  t.match(view.lastError, /ECONNREFUSED/)
  t.equal((await get(app, '/readyz')).status, 200, 'readiness does not depend on MCP servers')
  t.match(String((await get(app, '/metrics')).body), /toolgate_mcp_server_up\{server="late"\} 0/)

  const res = await runBatch(app, [
    { id: 'read', name: 'late_echo', arguments: { text: 'x' } },
    { id: 'write', name: 'late_fails', arguments: {} }
  ])
  for (const r of res.body.results) {
    t.equal(r.status, 'error', `${r.callId}: a definitive error, never uncertain`)
    t.equal(r.details.reason, 'executor_unavailable')
    t.equal(JSON.parse(r.content).error, 'executor_unavailable')
  }

  const faults = await startFaultServer(port)
  t.teardown(() => faults.close())
  await app.services.mcp.whenState('late', 'ready')
  t.equal(faults.calls.length, 0, 'nothing was sent while it was down')
  const up = await runBatch(app, [{ id: 'c', name: 'late_echo', arguments: { text: 'back' } }])
  t.equal(up.body.results[0].status, 'ok')
  t.equal(up.body.results[0].content, 'back')
  t.equal((await get(app, '/v1/tools/late_echo')).body.description, 'Echoes its text.')
  t.match(String((await get(app, '/metrics')).body), /toolgate_mcp_server_up\{server="late"\} 1/)

  // It goes away: the next call is refused at connect, not sent, and the server is down again.
  await faults.close()
  const gone = await runBatch(app, [{ id: 'c', name: 'late_fails', arguments: {} }])
  t.equal(gone.body.results[0].status, 'error')
  t.equal(gone.body.results[0].details.reason, 'executor_unavailable')
  await app.services.mcp.whenState('late', 'down')
})

t.test('notifications/tools/list_changed makes toolgate list the tools again', async (t) => {
  const faults = await startFaultServer()
  t.teardown(() => faults.close())
  const clock = new FakeClock()
  const { app } = await buildTestApp(t, { clock })
  // Pinning off: a new tool of a pinned server would wait in quarantine (test/mcp/pins.test.ts).
  await app.services.mcp.startAll([{ name: 'f', transport: 'streamableHttp', url: faults.url, pinning: 'off' }])
  t.notOk((await get(app, '/v1/mcp-servers/f')).body.tools.includes('f_added'))
  // Past the 5 s within which a server is not listed twice.
  clock.advance(5000)
  const refreshed = app.services.mcp.when('f', (v) => v.tools.includes('f_added'))
  faults.addTool('added')
  await refreshed
  const res = await runBatch(app, [{ id: 'c', name: 'f_added', arguments: {} }])
  t.equal(res.body.results[0].content, 'added')
})

t.test('include and exclude filter by the server\'s names; a name that clashes is not imported and is reported', async (t) => {
  const faults = await startFaultServer()
  t.teardown(() => faults.close())
  const ex = await startExecutor(t)
  const { app, logs } = await buildTestApp(t, { tools: [tool('x.echo', ex.url)] })
  await app.services.mcp.startAll([{ name: 'f', transport: 'streamableHttp', url: faults.url, prefix: 'x.', exclude: ['hang', 'drop'] }])
  const view = (await get(app, '/v1/mcp-servers/f')).body
  t.equal(view.state, 'ready')
  t.notOk(view.tools.includes('x.hang'))
  t.notOk(view.tools.includes('x.drop'))
  t.notOk(view.tools.includes('x.echo'), 'the clashing tool is not imported')
  t.ok(view.tools.includes('x.fails'))
  t.match(view.lastError, /x\.echo clashes with tool x\.echo/)
  t.ok(logs.some((l) => l.includes('MCP tools not imported') && l.includes('x.echo')))
  t.match((await get(app, '/v1/tools/x.echo')).body.executor.url, /^http:/, 'the registered tool is untouched')

  const only = await buildTestApp(t)
  await only.app.services.mcp.startAll([{ name: 'g', transport: 'streamableHttp', url: faults.url, prefix: '', include: ['echo', 'fails'] }])
  t.same((await get(only.app, '/v1/mcp-servers/g')).body.tools, ['echo', 'fails'])
})

t.test('overrides take any tool field but name, inputSchema and executor, and are checked before anything starts', async (t) => {
  const { app } = await buildTestApp(t)
  const base = { name: 'f', transport: 'streamableHttp', url: 'http://127.0.0.1:1/mcp' }
  const bad = [
    { ...base, tools: { echo: { inputSchema: { type: 'object' } } } },
    { ...base, tools: { echo: { executor: { url: 'http://x' } } } },
    { ...base, tools: { echo: { conflictKey: 'k:{nope' } } },
    { ...base, tools: { echo: { readOnly: true, action: {} } } },
    { ...base, transport: 'stdio' },
    { ...base, url: 'file:///etc/passwd' },
    { ...base, name: 'has space' }
  ]
  for (const def of bad) {
    await t.rejects(app.services.mcp.startAll([def]), InvalidMcpServerError, JSON.stringify(def))
  }
  t.same(app.services.mcp.list(), [], 'nothing was added')
  const err = await app.services.mcp.startAll([bad[2], { ...bad[3], name: 'g' }]).catch((e: InvalidMcpServerError) => e)
  t.equal((err as InvalidMcpServerError).problems.length, 2, 'every problem is listed')
})

t.test('an override wins over the annotations, and the tools of one server may be actions, exempt or scoped', async (t) => {
  const faults = await startFaultServer()
  t.teardown(() => faults.close())
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{
    name: 'f', transport: 'streamableHttp', url: faults.url, trust: 'trusted',
    tools: {
      echo: { readOnly: false, execution: 'parallel', trackExactRepeats: false, requiredScopes: ['f:echo'], aliases: ['say'], description: 'Says it.' },
      structured: { action: { projection: "{ 'status': receipt.status }" } }
    }
  }])
  const echo = (await get(app, '/v1/tools/f_echo')).body
  t.match(echo, { readOnly: false, execution: 'parallel', trackExactRepeats: false, requiredScopes: ['f:echo'], aliases: ['say'], description: 'Says it.' })
  const structured = (await get(app, '/v1/tools/f_structured')).body
  t.equal(structured.readOnly, false, 'an action is a write even from a trusted server that says readOnlyHint')
  const res = await runBatch(app, [{ id: 'a', name: 'f_structured', arguments: { text: 'z' } }])
  t.equal(res.body.results[0].content, '{"status":"committed"}')
})

t.test('a server definition with schema problems and others lists them all, each place once, enums with their values', async (t) => {
  const { app } = await buildTestApp(t)
  const err = await app.services.mcp.startAll([
    { name: 'f', transport: 'streamableHttp', url: 'ftp://h/mcp', trust: 'maybe', tools: { echo: { conflictKey: 'k:{nope' } } },
    { name: 'g', transport: 'streamableHttp' }
  ]).catch((e: unknown) => e)
  t.type(err, InvalidMcpServerError)
  const problems = (err as InvalidMcpServerError).problems
  const text = problems.join('\n')
  t.match(text, /trust: must be one of "untrusted", "trusted"/, 'the enum names its allowed values')
  t.match(text, /\/url: must be http or https/, 'the ftp URL beside the bad trust')
  t.match(text, /\/tools\/echo.*conflictKey/, 'the bad override too')
  t.equal(problems.filter((p) => p.includes('/url')).length, 2, 'the missing url once, the ftp one once')
  t.equal(new Set(problems).size, problems.length, 'no problem twice')
  t.same(app.services.mcp.list(), [], 'nothing was added')
})

t.test('a stdio server that fails to start is down with what it said on stderr as its lastError', async (t) => {
  const { app } = await buildTestApp(t, { mcpReconnect: { initialMs: 60_000, maxMs: 60_000 } })
  await app.services.mcp.startAll([{
    name: 'broken',
    transport: 'stdio',
    command: process.execPath,
    args: ['-e', 'process.stderr.write("Error accessing directory /nope: ENOENT\\n"); process.exit(1)']
  }])
  const view = (await get(app, '/v1/mcp-servers/broken')).body
  t.equal(view.state, 'down')
  t.match(view.lastError, /^connecting failed: .*; its stderr: "Error accessing directory \/nope: ENOENT"$/)
})
