import { setPriority } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import type { McpServerDefinition } from '../../schemas/mcp-server.js'
import { FakeClock } from '../clock.js'
import { buildTestApp, get, runBatch, tool } from '../helper.js'
import { listedTool, startScriptedServer } from './scripted-server.js'
import { type ScriptedProcess, startScriptedProcess } from './scripted-process.js'
import { TEST_STALL_BOUND_MS, startReference } from '../hostile/loop-reference.js'

/**
 * The longest event-loop delay of this process while `fn` runs, in ms (the
 * loop-delay histogram, 10 ms resolution), and with a reference, that of an
 * idle process meanwhile (see ../hostile/loop-reference.ts: the delay a
 * shared machine adds to any process is not this one's stall).
 */
async function worstStall<T> (fn: () => Promise<T>, reference?: Reference): Promise<{ value: T, maxMs: number, p99Ms: number, referenceMs: number }> {
  await reference?.read()
  const h = monitorEventLoopDelay({ resolution: 10 })
  h.enable()
  try {
    const value = await fn()
    return { value, maxMs: h.max / 1e6, p99Ms: h.percentile(99) / 1e6, referenceMs: await reference?.read() ?? 0 }
  } finally {
    h.disable()
  }
}

type Reference = Awaited<ReturnType<typeof startReference>>

// The figures are to be this process's own stalls, not its neighbours' work on a shared machine: it runs
// ahead of other processes where this user may ask so (root), as a service would on a host of its own.
try { setPriority(-15) } catch { t.comment('the test runs at normal priority: its loop-delay figures include the machine\'s other work') }

/** The scripted server in a child process listing `count` tools; with `sse`, its tools/list answered as an SSE stream. */
async function startChild (count: number, sse = false): Promise<ScriptedProcess> {
  return await startScriptedProcess(count, sse ? ['sse'] : [])
}

/** A stdio server (./stdio-child.ts) listing `count` tools beside `small`; `mode` as that file says. */
function stdioServer (name: string, count: number, mode = 'plain'): McpServerDefinition {
  return { name, transport: 'stdio', command: process.execPath, args: [...process.execArgv, fileURLToPath(new URL('./stdio-child.ts', import.meta.url)), String(count), mode] } as McpServerDefinition
}

// Each transport reads a list its own way: Streamable HTTP answered as JSON or as an SSE stream, and stdio lines.
const HUGE_LISTS: Array<{ transport: string, server: (t: Test) => Promise<McpServerDefinition>, extra: number }> = [
  { transport: 'Streamable HTTP answering JSON', server: async (t) => await childServer(t, false), extra: 2 },
  { transport: 'Streamable HTTP answering an SSE stream', server: async (t) => await childServer(t, true), extra: 2 },
  { transport: 'stdio', server: async () => stdioServer('big', 20_000), extra: 1 }
]

async function childServer (t: Test, sse: boolean): Promise<McpServerDefinition> {
  const server = await startChild(20_000, sse)
  t.teardown(() => server.close())
  return { name: 'big', transport: 'streamableHttp', url: server.url } as McpServerDefinition
}

for (const { transport, server, extra } of HUGE_LISTS) {
  t.test(`a server listing 20,000 tools over ${transport}: 1000 are imported, the rest reported, and other requests are answered meanwhile`, async (t) => {
    const definition = await server(t)
    // A running service has compiled its own tools before any server is listed.
    const { app } = await buildTestApp(t, { tools: [{ ...tool('warm', 'http://127.0.0.1:1/x'), inputSchema: { type: 'object', properties: { a: { type: 'string', maxLength: 9 }, b: { type: 'integer' } }, required: ['a'] } }] })
    const reference = await startReference(t)
    const { maxMs, p99Ms, referenceMs } = await worstStall(async () => {
      // Other work goes on meanwhile: the probes answer while the list is read and the tools are compiled.
      const start = app.services.mcp.startAll([definition])
      const probes: number[] = []
      for (let i = 0; i < 5; i++) probes.push((await get(app, '/healthz')).status)
      await start
      t.same(probes, [200, 200, 200, 200, 200])
    }, reference)
    const view = (await get(app, '/v1/mcp-servers/big')).body
    t.equal(view.state, 'ready')
    t.equal(view.tools.length, 1000, 'TOOLGATE_MCP_MAX_TOOLS, 1000 by default')
    t.match(view.lastError, new RegExp(`${20_000 + extra - 1000} more tools over the limit of 1000`))
    // The 3.4 MB list is parsed, planned, pinned and compiled in slices of about 10 ms of work.
    t.comment(`20,000 tools listed over ${transport}: loop-delay max ${maxMs.toFixed(1)} ms, p99 ${p99Ms.toFixed(1)} ms, idle reference ${referenceMs.toFixed(1)} ms`)
    t.ok(maxMs - referenceMs < TEST_STALL_BOUND_MS, `no stall over ${TEST_STALL_BOUND_MS} ms beyond the idle reference's delay (${(maxMs - referenceMs).toFixed(1)} ms)`)
  })
}

t.test('a stdio server writing a message over 16 MiB is down, its lastError naming the limit, and is not read further', async (t) => {
  const { app } = await buildTestApp(t)
  const rss = process.memoryUsage().rss
  await app.services.mcp.startAll([stdioServer('flood', 0, 'flood')])
  const view = (await get(app, '/v1/mcp-servers/flood')).body
  t.equal(view.state, 'down')
  t.match(view.lastError, /^connecting failed: the server wrote a message longer than 16777216 bytes/)
  t.same(view.tools, [])
  t.ok(process.memoryUsage().rss - rss < 256 * 1024 * 1024, 'the 64 MiB line was not read whole')
})

t.test('TOOLGATE_MCP_MAX_TOOLS sets the cap', async (t) => {
  const server = await startScriptedServer(Array.from({ length: 5 }, (_, i) => listedTool(`t${i}`)))
  t.teardown(() => server.close())
  const { app } = await buildTestApp(t, { config: { mcpMaxTools: 3 } })
  await app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url }])
  const view = (await get(app, '/v1/mcp-servers/s')).body
  t.same(view.tools, ['s_t0', 's_t1', 's_t2'])
  t.match(view.lastError, /2 more tools over the limit of 3/)
})

t.test('a refresh recompiles only the tools whose definitions changed', async (t) => {
  const server = await startScriptedServer(Array.from({ length: 300 }, (_, i) => listedTool(`t${i}`)))
  t.teardown(() => server.close())
  const clock = new FakeClock()
  const { app } = await buildTestApp(t, { clock })
  // Pinning off: this is about what a refresh compiles, not about what it may import.
  await app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url, pinning: 'off' }])
  const registry = app.services.tools
  const compile = registry.compile.bind(registry)
  const compiled: string[] = []
  registry.compile = (input, via) => { compiled.push((input as { name: string }).name); return compile(input, via) }
  server.tools[7] = listedTool('t7', { description: 'Changed.' })
  server.tools.push(listedTool('new'))
  clock.advance(5000)
  await app.services.mcp.refresh('s')
  t.same(compiled.sort(), ['s_new', 's_t7'])
  t.equal((await get(app, '/v1/tools/s_t7')).body.description, 'Changed.')
  t.equal((await get(app, '/v1/mcp-servers/s')).body.tools.length, 301)
})

t.test('a storm of list_changed: at most one listing per 5 s, and a notice in between is deferred, never dropped', async (t) => {
  const server = await startScriptedServer([listedTool('a')])
  t.teardown(() => server.close())
  const clock = new FakeClock()
  const { app } = await buildTestApp(t, { clock })
  await app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url, pinning: 'off' }])
  await server.streamOpen()
  t.equal(server.lists, 1)
  server.tools.push(listedTool('b'))
  const before = clock.timeouts
  const { maxMs } = await worstStall(async () => {
    for (let i = 0; i < 200; i++) server.listChanged()
    // The first notice arms the deferred listing; the others join it.
    while (clock.timeouts === before) await new Promise((resolve) => setImmediate(resolve))
  })
  t.equal(server.lists, 1, 'nothing listed within 5 s of the last listing')
  t.equal(clock.timeouts, before + 1, 'one deferred listing for 200 notices')
  const listed = app.services.mcp.when('s', (v) => v.tools.includes('s_b'))
  clock.advance(5000)
  await listed
  t.equal(server.lists, 2, 'the deferred listing ran once')
  t.ok(maxMs < 100, `the longest stall was ${maxMs.toFixed(1)} ms`)

  // An admin refresh within the window waits for the next allowed listing too.
  server.tools.push(listedTool('c'))
  const refreshed = app.services.mcp.refresh('s')
  while (clock.timeouts === before) await new Promise((resolve) => setImmediate(resolve))
  t.equal(server.lists, 2)
  clock.advance(5000)
  t.ok((await refreshed)!.tools.includes('s_c'))
  t.equal(server.lists, 3)
})

t.test('a tools/call answer of 100 MB is cut at TOOLGATE_MAX_EXECUTOR_RESPONSE_BYTES: a write is uncertain, a read an error', async (t) => {
  const server = await startChild(0)
  t.teardown(() => server.close())
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([
    { name: 'w', transport: 'streamableHttp', url: server.url },
    { name: 'r', transport: 'streamableHttp', url: server.url, trust: 'trusted' }
  ])
  const reference = await startReference(t)
  const rss = process.memoryUsage().rss
  const { value: [write, read], maxMs, p99Ms, referenceMs } = await worstStall(async () => await Promise.all([
    runBatch(app, [{ id: 'w', name: 'w_huge', arguments: {} }]),
    runBatch(app, [{ id: 'r', name: 'r_huge', arguments: {} }, { id: 's', name: 'r_small', arguments: {} }])
  ]), reference)
  t.equal(write.status, 200)
  t.equal(read.status, 200)
  t.equal(write.body.results[0].status, 'uncertain')
  t.equal(write.body.results[0].details.cause, 'response_too_large')
  t.match(JSON.parse(write.body.results[0].content), { error: 'outcome_unknown' }, 'the model is told the write may have happened')
  t.equal(read.body.results[0].status, 'error')
  t.equal(read.body.results[0].details.cause, 'response_too_large')
  t.match(JSON.parse(read.body.results[0].content), { error: 'executor_failed' }, 'and that the read failed')
  t.equal(read.body.results[1].status, 'ok', 'the read beside it is answered')
  t.ok(process.memoryUsage().rss - rss < 64 * 1024 * 1024, 'the answer was not read whole')
  t.comment(`100 MB answer: loop-delay max ${maxMs.toFixed(1)} ms, p99 ${p99Ms.toFixed(1)} ms, idle reference ${referenceMs.toFixed(1)} ms`)
  t.ok(maxMs - referenceMs < TEST_STALL_BOUND_MS, `no stall over ${TEST_STALL_BOUND_MS} ms beyond the idle reference's delay (${(maxMs - referenceMs).toFixed(1)} ms)`)
  t.equal((await runBatch(app, [{ id: 'again', name: 'r_small', arguments: {} }])).body.results[0].status, 'ok', 'the server is still usable')
})
