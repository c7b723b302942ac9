import t from 'tap'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { buildTestApp, post, runBatch } from '../helper.js'
import { startSdkHttpServer } from './sdk-http-server.js'

/**
 * A server's progress during a call resets the call's timeout, up to the
 * server entry's maxTimeoutMs in all (SPEC section 18). The server is the
 * SDK's: its `slow` tool reports progress every 50 ms for 1.2 s, so it
 * outlasts a 400 ms timeout only because each report resets it.
 * (The SDK's request timers are its own, on the real clock.)
 */
const STEPS = 24
const GAP_MS = 50

function build (): Server {
  const server = new Server({ name: 'slow', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: 'slow', description: 'Reports progress while it works.', inputSchema: { type: 'object' as const, properties: { text: { type: 'string' } } } }] }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = request.params._meta?.progressToken
    for (let i = 1; i <= STEPS; i++) {
      await new Promise((resolve) => setTimeout(resolve, GAP_MS))
      if (progressToken === undefined) continue
      // The message repeats the call's argument: it must reach no event.
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: i, total: STEPS, message: `working on ${String(request.params.arguments?.text)}` } }).catch(() => {})
    }
    return { content: [{ type: 'text', text: progressToken === undefined ? 'no progress token' : 'done' }] }
  })
  return server
}

const upstreamServer = await startSdkHttpServer(build)
t.teardown(() => upstreamServer.close())
const url = upstreamServer.url

t.test("a call whose server keeps reporting progress outlasts its timeout, on the batch route too (progress is always asked for)", async (t) => {
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url, trust: 'trusted', timeoutMs: 400 }])
  const res = await runBatch(app, [{ id: 'c1', name: 'p_slow', arguments: {} }])
  t.equal(res.status, 200)
  t.equal(res.body.results[0].status, 'ok', JSON.stringify(res.body.results[0]))
  t.match(JSON.stringify(res.body.results[0].content), /done/)
})

t.test('progress resets the timeout no further than maxTimeoutMs in all', async (t) => {
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url, trust: 'trusted', timeoutMs: 400, maxTimeoutMs: 600 }])
  const res = await runBatch(app, [{ id: 'c1', name: 'p_slow', arguments: {} }])
  t.equal(res.status, 200)
  t.not(res.body.results[0].status, 'ok', 'the call is cut at maxTimeoutMs')
  // A timeout, not the server's error: a write cut this way would be uncertain, never a definitive error.
  t.equal(res.body.results[0].details.cause, 'timeout')
  const view = await app.inject({ method: 'GET', url: '/v1/mcp-servers/p' })
  t.equal(view.json().maxTimeoutMs, 600, 'the server entry shows its maxTimeoutMs')
})

t.test("an imported tool's executor.maxTimeoutMs is its server's, and a tool definition may hold one", async (t) => {
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url, trust: 'trusted', timeoutMs: 400, maxTimeoutMs: 5000 }])
  const tool = await app.inject({ method: 'GET', url: '/v1/tools/p_slow' })
  t.same(tool.json().executor, { url: 'mcp://p/slow', timeoutMs: 400, maxTimeoutMs: 5000 })
  const put = await app.inject({ method: 'PUT', url: '/v1/tools/h', payload: { inputSchema: { type: 'object' }, executor: { url: 'http://127.0.0.1:1/h', timeoutMs: 100, maxTimeoutMs: 1000 } } })
  t.equal(put.statusCode, 201, put.body)
  t.equal(put.json().executor.maxTimeoutMs, 1000)
  const bad = await app.inject({ method: 'PUT', url: '/v1/tools/h', payload: { inputSchema: { type: 'object' }, executor: { url: 'http://127.0.0.1:1/h', maxTimeoutMs: 0 } } })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'invalid_tool')
})

t.test('progress is the call.progress event under the lifecycle audience, numbers only, and no event under stock', async (t) => {
  const { app, logs } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url, trust: 'trusted', timeoutMs: 5000 }])
  const SECRET = 'argument-text-5c1e'
  const res = await runBatch(app, [{ id: 'c1', name: 'p_slow', arguments: { text: SECRET } }], { events: 'lifecycle' })
  t.equal(res.body.results[0].status, 'ok')
  const progress = res.body.events.filter((e: { type: string }) => e.type === 'call.progress')
  t.equal(progress.length, STEPS, 'one event per notification')
  t.match(progress[0], { type: 'call.progress', callId: 'c1', tool: 'p_slow', epoch: 0, progress: 1, total: STEPS })
  t.same(Object.keys(progress[0]).sort(), ['at', 'callId', 'epoch', 'progress', 'seq', 'tool', 'total', 'type'], "neither the arguments nor the server's message")
  const types = res.body.events.map((e: { type: string }) => e.type)
  t.ok(types.indexOf('call.started') < types.indexOf('call.progress') && types.lastIndexOf('call.progress') < types.indexOf('call.completed'), 'between the call starting and completing')
  t.notOk(JSON.stringify(res.body.events).includes(SECRET))
  t.notOk(logs.some((l) => l.includes(SECRET)), 'nor in the logs')
  const stock = await runBatch(app, [{ id: 'c1', name: 'p_slow', arguments: { text: SECRET } }])
  t.notOk(stock.body.events.some((e: { type: string }) => e.type === 'call.progress'), 'stock: internal')
})

t.test('a streamed batch sends call.progress as server-sent events', async (t) => {
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'p', transport: 'streamableHttp', url, trust: 'trusted', timeoutMs: 5000 }])
  const run = await post(app, '/v1/runs', { events: 'lifecycle' })
  const res = await app.inject({ method: 'POST', url: `/v1/runs/${run.body.runId}/batches`, headers: { accept: 'text/event-stream' }, payload: { calls: [{ id: 'c1', name: 'p_slow', arguments: { text: 'x' } }] } })
  t.match(res.headers['content-type'], /text\/event-stream/)
  const events = res.body.split('\n').filter((l) => l.startsWith('event: call.progress'))
  t.equal(events.length, STEPS)
})
