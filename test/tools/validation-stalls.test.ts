/**
 * The audit's attacks on validation and compile time (SPEC section 19),
 * each within every schema limit, replayed against an app in this process
 * while its event-loop delay is measured: a call is refused or answered,
 * and the loop is never held for seconds as it was (8.3 s, 7.2 s, 12.2 s).
 * The bound asserted is generous (a loaded machine of 2 cores): the point
 * is seconds against a fraction of one.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { buildTestApp, get, runBatch, startExecutor, tool } from '../helper.js'
import { startScriptedServer } from '../mcp/scripted-server.js'

const STALL_BOUND_MS = 400
const values = Array.from({ length: 20_000 }, (_, i) => `v${i}`)
/** 20,000 values, 169 KB of schema: each item of the array is compared with each. */
const enumItems = { type: 'object', properties: { a: { type: 'array', items: { enum: values } } } }
const manyMatches = { a: Array.from({ length: 20_000 }, () => 'v19999') }

/**
 * The longest event-loop delay while `work` runs, in ms. The histogram
 * measures each delay from its previous sample, so it samples a while
 * before the work (a stall at once would have none to measure from) and
 * after it (the stall is recorded by the next sample).
 */
async function longestDelay<T> (work: () => Promise<T>): Promise<{ result: T, maxMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 10 })
  h.enable()
  try {
    await sleep(50)
    const result = await work()
    await sleep(50)
    return { result, maxMs: h.max / 1e6 }
  } finally {
    h.disable()
  }
}

t.test('arguments that would take seconds to check against a 20,000-value enum are rejected invalid_arguments, without holding the loop', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('costly', ex.url, { inputSchema: enumItems, readOnly: true })] })
  // First a batch of a few items (the app's first batch also loads and compiles its own code, a stall of its own).
  const small = await runBatch(app, [{ id: 'ok', name: 'costly', arguments: { a: ['v1', 'v19999'] } }, { id: 'no', name: 'costly', arguments: { a: ['v1', 'w'] } }])
  t.equal(small.body.results[0].status, 'ok', 'a few items of the same tool validate as before')
  t.match(small.body.results[1], { status: 'rejected', details: { reason: 'invalid_arguments' }, content: /\/a\/1 must be equal to one of the allowed values/ })

  const { result, maxMs } = await longestDelay(() => runBatch(app, [{ id: 'c1', name: 'costly', arguments: manyMatches }]))
  t.equal(result.status, 200)
  t.match(result.body.results[0], { status: 'rejected', details: { reason: 'invalid_arguments' } })
  t.match(result.body.results[0].content, /took longer than 50 ms \(TOOLGATE_MAX_VALIDATION_MS\)/)
  t.ok(maxMs < STALL_BOUND_MS, `longest loop delay ${maxMs.toFixed(0)} ms, under ${STALL_BOUND_MS} ms`)
  t.equal(ex.calls.length, 1, 'only the valid small call was sent')
})

t.test('a 250-value enum and ordinary arguments validate as before, defaults filled in', async (t) => {
  const ex = await startExecutor(t)
  const countries = Array.from({ length: 250 }, (_, i) => `C${i}`)
  const inputSchema = { type: 'object', properties: { country: { enum: countries }, n: { type: 'integer', default: 3 } }, required: ['country'] }
  const { app } = await buildTestApp(t, { tools: [tool('pick', ex.url, { inputSchema, readOnly: true })] })
  const res = await runBatch(app, [{ id: 'a', name: 'pick', arguments: { country: 'C249' } }, { id: 'b', name: 'pick', arguments: { country: 'XX' } }])
  t.equal(res.body.results[0].status, 'ok')
  t.same(ex.calls[0]?.arguments, { country: 'C249', n: 3 })
  t.match(res.body.results[1], { status: 'rejected', details: { reason: 'invalid_arguments' } })
})

const costlyPatterns = (): Record<string, unknown> => {
  const patternProperties: Record<string, unknown> = {}
  for (let i = 0; i < 1000; i++) patternProperties[`^k${i}[a-z]{0,200}$`] = { type: 'string' }
  return { type: 'object', patternProperties }
}

t.test('1,000 patterns of 400 instructions each are refused as too costly before they are compiled', async (t) => {
  const { app } = await buildTestApp(t)
  const { result, maxMs } = await longestDelay(() => app.inject({ method: 'PUT', url: '/v1/tools/pp', payload: { name: 'pp', inputSchema: costlyPatterns(), readOnly: true, executor: { url: 'http://127.0.0.1:1/pp' } } }))
  t.equal(result.statusCode, 400)
  t.match(result.json(), { code: 'invalid_tool' })
  t.match(result.body, /patterns are too costly: they compile to more than 10000 instructions, the limit/)
  t.ok(maxMs < STALL_BOUND_MS, `longest loop delay ${maxMs.toFixed(0)} ms, under ${STALL_BOUND_MS} ms`)
})

t.test('an MCP server\'s tool with those patterns is not imported, its lastError saying why', async (t) => {
  const server = await startScriptedServer([{ name: 'bomb', inputSchema: costlyPatterns() }, { name: 'fine', inputSchema: { type: 'object' } }])
  t.teardown(() => server.close())
  const { app } = await buildTestApp(t)
  const { maxMs } = await longestDelay(() => app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url }]))
  const view = (await get(app, '/v1/mcp-servers/s')).body
  t.same(view.tools, ['s_fine'])
  t.match(view.lastError, /bomb.*patterns are too costly/)
  t.ok(maxMs < STALL_BOUND_MS, `longest loop delay ${maxMs.toFixed(0)} ms, under ${STALL_BOUND_MS} ms`)
})

t.test('an MCP answer of 20,000 items checked against a 20,000-value enum outputSchema is refused invalid_output, without holding the loop', async (t) => {
  const server = await startScriptedServer([{ name: 'out', inputSchema: { type: 'object' }, outputSchema: enumItems }])
  t.teardown(() => server.close())
  server.answer = () => ({ result: { content: [], structuredContent: manyMatches } })
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url, trust: 'trusted' }])
  const { result, maxMs } = await longestDelay(() => runBatch(app, [{ id: 'c', name: 's_out', arguments: {} }]))
  t.match(result.body.results[0], { details: { reason: 'invalid_output' } })
  t.ok(maxMs < STALL_BOUND_MS, `longest loop delay ${maxMs.toFixed(0)} ms, under ${STALL_BOUND_MS} ms`)
  server.answer = () => ({ result: { content: [], structuredContent: { a: ['v1', 'v2'] } } })
  t.equal((await runBatch(app, [{ id: 'd', name: 's_out', arguments: {} }])).body.results[0].status, 'ok', 'a small answer that matches passes')
})
