import t from 'tap'
import { buildTestApp, get, runBatch } from '../helper.js'
import { startFaultServer } from './fault-server.js'

// One toolgate in front of one misbehaving MCP server, twice: `r` trusts it (its readOnlyHint
// tools are reads), `w` does not (every tool is a write). So each behaviour is seen by a read and a write.
const faults = await startFaultServer()
t.teardown(() => faults.close())
const HEADER_CANARY = 'Bearer canary-header-5d1e'
const ARGUMENT_CANARY = 'canary-argument-93b2'
const { app, logs } = await buildTestApp(t)
const entry = (name: string, extra: Record<string, unknown>): Record<string, unknown> => ({
  name, transport: 'streamableHttp', url: faults.url, headers: { authorization: HEADER_CANARY }, timeoutMs: 2000, ...extra
})
await app.services.mcp.startAll([
  entry('r', { trust: 'trusted' }),
  entry('w', {}),
  entry('act', { include: ['structured', 'fails', 'hang'], tools: { structured: { action: {} }, fails: { action: {} }, hang: { action: {} } } })
])

type Status = 'ok' | 'error' | 'uncertain'
const CASES: Array<{ tool: string, read: Status, write: Status, cause?: string }> = [
  { tool: 'echo', read: 'ok', write: 'ok' },
  { tool: 'fails', read: 'error', write: 'error' },
  { tool: 'rpcerror', read: 'error', write: 'error', cause: 'jsonrpc_error' },
  { tool: 'hang', read: 'error', write: 'uncertain', cause: 'timeout' },
  { tool: 'drop', read: 'error', write: 'uncertain', cause: 'connection_lost' },
  { tool: 'fail500', read: 'error', write: 'uncertain', cause: 'executor_5xx' }
]

t.test('both servers are ready, the trusted one with reads and the untrusted one with writes', async (t) => {
  t.equal((await get(app, '/v1/mcp-servers/r')).body.state, 'ready')
  t.equal((await get(app, '/v1/tools/r_echo')).body.readOnly, true)
  t.equal((await get(app, '/v1/tools/w_echo')).body.readOnly, false)
})

for (const c of CASES) {
  for (const kind of ['read', 'write'] as const) {
    t.test(`${c.tool} as a ${kind} is ${c[kind]}`, async (t) => {
      const prefix = kind === 'read' ? 'r' : 'w'
      const res = await runBatch(app, [{ id: 'c1', name: `${prefix}_${c.tool}`, arguments: { text: ARGUMENT_CANARY } }])
      t.equal(res.status, 200)
      const [r] = res.body.results
      t.equal(r.status, c[kind])
      t.equal(r.isError, c[kind] !== 'ok')
      if (c.cause !== undefined) t.equal(r.details.cause, c.cause)
      t.match(r.details.operationId, /^op_/)
    })
  }
}

t.test('each call carries its operation id in _meta and the prepared arguments', async (t) => {
  const res = await runBatch(app, [{ id: 'c1', name: 'w_echo', arguments: { text: 'hello' } }])
  const sent = faults.calls.at(-1)!
  t.equal(sent.tool, 'echo')
  t.same(sent.arguments, { text: 'hello' })
  t.equal(sent.operationId, res.body.results[0].details.operationId)
  t.equal(res.body.results[0].content, 'hello')
})

t.test('a timed-out call is cancelled at the server with notifications/cancelled', async (t) => {
  const cancelled = faults.nextCancel()
  const res = await runBatch(app, [{ id: 'c1', name: 'w_hang', arguments: {} }])
  t.equal(res.body.results[0].status, 'uncertain')
  // Resolves only when the server's handler was aborted by the client's notifications/cancelled.
  await cancelled
  t.pass('the server saw the request cancelled')
})

t.test('an uncertain write blocks the later writes of the batch; reads still run', async (t) => {
  const res = await runBatch(app, [
    { id: 'c1', name: 'w_fail500', arguments: {} },
    { id: 'c2', name: 'w_echo', arguments: { text: 'x' } },
    { id: 'c3', name: 'r_echo', arguments: { text: 'y' } }
  ])
  t.same(res.body.results.map((r: { status: string }) => r.status), ['uncertain', 'blocked', 'ok'])
  t.equal(res.body.results[1].details.blockedBy, 'c1')
})

t.test('content: structuredContent serialized first, then the joined text, else the content array', async (t) => {
  const res = await runBatch(app, [
    { id: 's', name: 'r_structured', arguments: { text: 'q' } },
    { id: 'm', name: 'r_mixed', arguments: {} },
    { id: 'e', name: 'r_fails', arguments: {} },
    { id: 'j', name: 'r_rpcerror', arguments: {} }
  ])
  const [s, m, e, j] = res.body.results
  t.same(JSON.parse(s.content), { echoed: 'q', n: 1 })
  t.same(JSON.parse(m.content), [{ type: 'text', text: 'a picture' }, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }])
  t.equal(e.content, 'it broke')
  t.match(JSON.parse(j.content), { error: 'executor_rejected', message: /-32602.*no such widget/ })
  t.equal(j.details.jsonRpcCode, -32602)
})

t.test('an action tool gets its receipt from structuredContent: committed, rejected on isError, uncertain on a timeout', async (t) => {
  const res = await runBatch(app, [
    { id: 'a1', name: 'act_structured', arguments: { text: 'built' } },
    { id: 'a2', name: 'act_fails', arguments: {} }
  ], { toolExecution: 'sequential' })
  const [a1, a2] = res.body.results
  t.equal(a1.status, 'ok')
  t.equal(a1.details.receipt.status, 'committed')
  t.same(a1.details.receipt.result, { echoed: 'built', n: 1 })
  t.equal(a2.status, 'error')
  t.equal(a2.details.receipt.status, 'rejected')
  t.same(a2.details.receipt.result, { content: [{ type: 'text', text: 'it broke' }] })
  const hung = await runBatch(app, [{ id: 'a3', name: 'act_hang', arguments: {} }])
  t.equal(hung.body.results[0].status, 'uncertain')
  t.equal(hung.body.results[0].details.receipt.status, 'uncertain')
})

t.test('header values and arguments never reach logs, metrics or the server views', async (t) => {
  t.ok(faults.headers.some((h) => h.authorization === HEADER_CANARY), 'the header was sent')
  t.ok(faults.headers.some((h) => h['user-agent'] === 'toolgate'), 'by toolgate\'s own client (lean-fetch.ts), which names itself')
  const text = logs.join('')
  t.notOk(text.includes('canary-header-5d1e'), 'no header value in the logs')
  t.notOk(text.includes(ARGUMENT_CANARY), 'no argument in the logs')
  const metrics = String((await get(app, '/metrics')).body)
  t.notOk(metrics.includes('canary'))
  t.match(metrics, /toolgate_mcp_server_up\{server="r"\} 1/)
  const views = JSON.stringify((await get(app, '/v1/mcp-servers')).body)
  t.notOk(views.includes('canary'))
  t.match(views, /"headerNames":\["authorization"\]/)
})
