/**
 * Every label set toolgate can know is exported at 0 before its first
 * event, so Prometheus has a sample to compare the first event with
 * (`increase()` over a series that appears with its first count is 0).
 */
import t from 'tap'
import { buildTestApp, startExecutor, tool } from '../helper.js'
import { scrape } from './scrape.js'

const STATUSES = ['ok', 'error', 'rejected', 'uncertain', 'blocked', 'cancelled', 'terminated', 'projection_failed', 'denied']
const PER_TOOL = ['toolgate_repeat_advisories_total', 'toolgate_projection_failures_total', 'toolgate_uncertain_writes_total', 'toolgate_blocked_calls_total']

t.test('at start, every tool of the registry, status, reason, loop kind and action, executor cause and store operation is exported at 0', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('paint', ex.url)] })
  const m = await scrape(app)
  for (const name of ['look', 'paint', '(unknown)']) {
    for (const status of STATUSES) t.ok(m.has('toolgate_tool_calls_total', { tool: name, status }), `calls of ${name} ${status}`)
  }
  for (const metric of PER_TOOL) for (const name of ['look', 'paint']) t.ok(m.has(metric, { tool: name }), `${metric} of ${name}`)
  for (const reason of ['exact_repeat', 'repeat_cycle', 'consecutive_errors', 'no_progress', 'max_turns', 'max_tool_calls', 'max_total_tokens', 'timeout', 'projection_failed']) {
    t.ok(m.has('toolgate_run_terminations_total', { reason }), `terminations by ${reason}`)
  }
  for (const kind of ['exact', 'cycle', 'errors', 'no_progress']) for (const action of ['advisory', 'terminated']) t.ok(m.has('toolgate_loop_detections_total', { kind, action }), `loops ${kind} ${action}`)
  for (const executor of ['http', 'mcp']) for (const cause of ['connect_refused', 'timeout', 'http_4xx', 'http_5xx', 'is_error', 'jsonrpc_error']) t.ok(m.has('toolgate_executor_failures_total', { executor, cause }), `executor failures ${executor} ${cause}`)
  for (const operation of ['updateRun', 'completeBatch', 'putReceipt']) t.ok(m.has('toolgate_store_errors_total', { operation }), `store errors of ${operation}`)
  const toolgate = m.samples.filter((s) => s.name.startsWith('toolgate_') && s.name.endsWith('_total'))
  t.ok(toolgate.length > 100, `${toolgate.length} counter series`)
  t.strictSame(toolgate.filter((s) => s.value !== 0).map((s) => s.name), [], 'all at 0 before any traffic')
})

t.test('a tool registered at run time is exported at 0 at the next scrape, and the zero series of a tool removed go', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  t.notOk((await scrape(app)).has('toolgate_uncertain_writes_total', { tool: 'paint' }), 'not a tool yet')
  const put = await app.inject({ method: 'PUT', url: '/v1/tools/paint', payload: tool('paint', ex.url) })
  t.equal(put.statusCode, 201)
  let m = await scrape(app)
  for (const metric of PER_TOOL) t.equal(m.has(metric, { tool: 'paint' }) && m.value(metric, { tool: 'paint' }), 0, `${metric} of paint at 0`)
  for (const status of STATUSES) t.ok(m.has('toolgate_tool_calls_total', { tool: 'paint', status }), `calls of paint ${status}`)

  t.equal((await app.inject({ method: 'DELETE', url: '/v1/tools/paint' })).statusCode, 204)
  m = await scrape(app)
  t.notOk(m.has('toolgate_tool_calls_total', { tool: 'paint' }), 'its zero series went with it')
  t.ok(m.has('toolgate_tool_calls_total', { tool: 'look', status: 'ok' }), 'the others stay')
})

t.test('a removed tool whose calls were counted keeps its counted series', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('gone', ex.url, { readOnly: true })] })
  await app.inject({ method: 'POST', url: '/v1/runs', payload: { runId: 'r1' } })
  const batch = await app.inject({ method: 'POST', url: '/v1/runs/r1/batches', payload: { calls: [{ id: 'a', name: 'gone', arguments: {} }] } })
  t.equal(batch.statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/tools/gone' })).statusCode, 204)
  const m = await scrape(app)
  t.equal(m.value('toolgate_tool_calls_total', { tool: 'gone', status: 'ok' }), 1, 'the count stays')
  t.notOk(m.has('toolgate_tool_calls_total', { tool: 'gone', status: 'error' }), 'its zeros go')
})
