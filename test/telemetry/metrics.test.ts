import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, get, holdCalls, post, startExecutor, tool } from '../helper.js'
import { parse, scrape } from './scrape.js'

async function batch (app: FastifyInstance, runId: string, calls: unknown[], run: Record<string, unknown> = {}): Promise<unknown> {
  const created = await post(app, '/v1/runs', { runId, ...run })
  if (created.status !== 201) throw new Error(JSON.stringify(created.body))
  const res = await post(app, `/v1/runs/${runId}/batches`, { calls })
  if (res.status !== 200) throw new Error(JSON.stringify(res.body))
  return res.body
}

t.test('GET /metrics counts batches, calls, epochs, repeats, projection failures, uncertain writes and blocked calls as they happen', async (t) => {
  const ex = await startExecutor(t)
  ex.on('flaky', (_c, _r, reply) => reply.code(502).send({}))
  ex.on('build', () => ({ status: 'committed', result: { label: 'Wall' } }))
  const { app } = await buildTestApp(t, {
    tools: [
      tool('look', ex.url, { readOnly: true }),
      tool('poke', ex.url),
      tool('flaky', ex.url),
      tool('build', ex.url, { action: { projection: '"not an object"', maxModelReceiptChars: 4096 } })
    ]
  })

  const before = await scrape(app)
  t.equal(before.value('toolgate_batches_total', { outcome: 'completed' }), 0, 'outcomes are exported before the first batch')
  t.match(before.text, /# TYPE toolgate_batches_total counter/)

  // Two reads overlap in epoch 0, the write is epoch 1, the unknown tool is rejected.
  await batch(app, 'r1', [
    { id: 'a', name: 'look', arguments: { x: 1 } },
    { id: 'b', name: 'look', arguments: { x: 2 } },
    { id: 'c', name: 'poke', arguments: { x: 3 } },
    { id: 'd', name: 'typo_tool', arguments: {} }
  ])
  let m = await scrape(app)
  t.equal(m.value('toolgate_batches_total', { outcome: 'completed' }), 1)
  t.equal(m.value('toolgate_tool_calls_total', { tool: 'look', status: 'ok' }), 2)
  t.equal(m.value('toolgate_tool_calls_total', { tool: 'poke', status: 'ok' }), 1)
  t.equal(m.value('toolgate_tool_calls_total', { tool: '(unknown)', status: 'rejected' }), 1, 'an unknown name gets one fixed label')
  t.notMatch(m.text, /typo_tool/)
  t.equal(m.value('toolgate_tool_call_duration_seconds_count', { tool: 'look' }), 2)
  t.equal(m.value('toolgate_tool_call_duration_seconds_count', { tool: 'poke' }), 1)
  t.equal(m.value('toolgate_tool_call_duration_seconds_bucket', { tool: 'look', le: '+Inf' }), 2)
  t.ok(m.text.includes('toolgate_tool_call_duration_seconds_bucket{le="0.002",tool="look"}') || m.text.includes('toolgate_tool_call_duration_seconds_bucket{tool="look",le="0.002"}'), 'buckets start at a few milliseconds')
  t.match(m.text, /toolgate_tool_call_duration_seconds_bucket\{[^}]*le="60"/, 'and reach a minute')
  t.equal(m.value('toolgate_batch_duration_seconds_count'), 1)
  t.equal(m.value('toolgate_epochs_total'), 2)
  t.equal(m.value('toolgate_epoch_width_calls_count'), 2)
  t.equal(m.value('toolgate_epoch_width_calls_sum'), 3)
  t.equal(m.value('toolgate_epoch_width_calls_bucket', { le: '1' }), 1)
  t.equal(m.value('toolgate_epoch_width_calls_bucket', { le: '2' }), 2)
  t.equal(m.value('toolgate_in_flight_calls'), 0)
  t.equal(m.value('toolgate_in_flight_batches'), 0)
  t.equal(m.value('toolgate_active_runs'), 1)

  // An uncertain write blocks the later write of the batch.
  await batch(app, 'r2', [{ id: 'a', name: 'flaky', arguments: {} }, { id: 'b', name: 'poke', arguments: {} }])
  m = await scrape(app)
  t.equal(m.value('toolgate_uncertain_writes_total', { tool: 'flaky' }), 1)
  t.equal(m.value('toolgate_tool_calls_total', { tool: 'flaky', status: 'uncertain' }), 1)
  t.equal(m.value('toolgate_blocked_calls_total', { tool: 'poke' }), 1)
  t.equal(m.value('toolgate_tool_calls_total', { tool: 'poke', status: 'blocked' }), 1)

  // The 2nd identical call is advised about, the 3rd terminates the run.
  const same = { name: 'look', arguments: { k: 'same' } }
  await batch(app, 'r3', [{ id: 'a', ...same }, { id: 'b', ...same }, { id: 'c', ...same }], { limits: { exactToolRepeatAdvisoryThreshold: 2, exactToolRepeatTerminationThreshold: 3 } })
  m = await scrape(app)
  t.equal(m.value('toolgate_repeat_advisories_total', { tool: 'look' }), 1)
  t.equal(m.value('toolgate_loop_detections_total', { kind: 'exact', action: 'terminated' }), 1)
  t.notMatch(m.text, /toolgate_repeat_terminations_total/, 'a termination is counted once, by its reason')
  t.equal(m.value('toolgate_run_terminations_total', { reason: 'exact_repeat' }), 1)
  t.equal(m.value('toolgate_batches_total', { outcome: 'terminated' }), 1)
  t.equal(m.value('toolgate_tool_calls_total', { tool: 'look', status: 'terminated' }), 1)

  // A projection that does not give an object closes the batch.
  await batch(app, 'r4', [{ id: 'a', name: 'build', arguments: { x: 1 } }])
  m = await scrape(app)
  t.equal(m.value('toolgate_projection_failures_total', { tool: 'build' }), 1)
  t.equal(m.value('toolgate_batches_total', { outcome: 'closed' }), 1)
  t.equal(m.value('toolgate_run_terminations_total', { reason: 'projection_failed' }), 1)
  t.equal(m.value('toolgate_tool_calls_total', { tool: 'build', status: 'projection_failed' }), 1)

  t.equal(m.value('toolgate_batches_total'), 4)
  t.equal(m.value('toolgate_active_runs'), 2, 'r1 and r2 are active; r3 and r4 were terminated')
  await post(app, '/v1/runs/r1/cancel', {})
  t.equal((await scrape(app)).value('toolgate_active_runs'), 1)
})

t.test('the metrics carry process and Node.js defaults, and never a run id, call id or argument', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  await batch(app, 'run-id-zz91', [{ id: 'call-id-zz92', name: 'look', arguments: { k: 'argument-zz93' } }])
  const res = await get(app, '/metrics')
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const text = String(res.body)
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
    t.match(text, new RegExp(`^${name} `, 'm'), name)
  }
  t.notMatch(text, /zz9/)
  const labelNames = new Set(parse(text).filter((s) => s.name.startsWith('toolgate_')).flatMap((s) => Object.keys(s.labels)))
  t.ok([...labelNames].every((l) => ['le', 'outcome', 'reason', 'status', 'tool', 'how', 'kind', 'action', 'executor', 'cause', 'operation', 'decision', 'route', 'method', 'server', 'version', 'node_version'].includes(l)), `labels are a small fixed set: ${[...labelNames].join(', ')}`)
  for (const m of text.matchAll(/^# TYPE (toolgate_\S+) (\S+)$/gm)) {
    const [, name, type] = m
    if (type === 'counter') t.match(name, /_total$/, `${name} is a counter ending in _total`)
    else t.notMatch(name, /_total$/, `${name} is a ${type} without _total`)
    t.match(text, new RegExp(`^# HELP ${name} \\S`, 'm'), `${name} has a help text`)
  }
})

t.test('each app instance has its own registry', async (t) => {
  const ex = await startExecutor(t)
  const one = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  const two = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  await batch(one.app, 'r1', [{ id: 'a', name: 'look', arguments: {} }])
  t.equal((await scrape(one.app)).value('toolgate_tool_calls_total', { tool: 'look', status: 'ok' }), 1)
  t.equal((await scrape(two.app)).value('toolgate_tool_calls_total', { tool: 'look', status: 'ok' }), 0)
})

t.test('with TOOLGATE_METRICS_AUTH=true, GET /metrics needs the operator role', async (t) => {
  const { app } = await buildTestApp(t, {
    config: { metricsAuth: true },
    keysDoc: { keys: [{ key: 'ops-key-0123456789abcdef', tenant: 'ops', roles: ['operator'] }, { key: 'orch-key-0123456789abcdef', tenant: 'acme', roles: ['orchestrator'] }] }
  })
  t.equal((await get(app, '/metrics')).status, 401)
  t.equal((await get(app, '/metrics', { authorization: 'Bearer orch-key-0123456789abcdef' })).status, 403)
  t.equal((await get(app, '/metrics', { authorization: 'Bearer ops-key-0123456789abcdef' })).status, 200)
})

t.test('without TOOLGATE_METRICS_AUTH, GET /metrics needs no key even when keys are configured', async (t) => {
  const { app } = await buildTestApp(t, { keysDoc: { keys: [{ key: 'ops-key-0123456789abcdef', tenant: 'ops', roles: ['operator'] }] } })
  t.equal((await get(app, '/metrics')).status, 200)
})

t.test('in-flight gauges show a held call, and counts kept between scrapes are added once', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('slow', ex.url, { readOnly: true }), tool('look', ex.url, { readOnly: true })] })
  const held = holdCalls(ex, 'slow')
  await post(app, '/v1/runs', { runId: 'r1' })
  const answer = post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'slow', arguments: {} }] })
  await held.started
  const during = await scrape(app)
  t.equal(during.value('toolgate_in_flight_calls'), 1)
  t.equal(during.value('toolgate_in_flight_batches'), 1)
  held.release()
  t.equal((await answer).status, 200)
  await batch(app, 'r2', [{ id: 'a', name: 'look', arguments: {} }, { id: 'b', name: 'look', arguments: {} }])
  const first = await scrape(app)
  const second = await scrape(app)
  for (const m of [first, second]) {
    t.equal(m.value('toolgate_tool_calls_total', { tool: 'slow', status: 'ok' }), 1)
    t.equal(m.value('toolgate_tool_calls_total', { tool: 'look', status: 'ok' }), 2)
    t.equal(m.value('toolgate_batches_total', { outcome: 'completed' }), 2)
    t.equal(m.value('toolgate_epochs_total'), 2)
    t.equal(m.value('toolgate_in_flight_calls'), 0)
    t.equal(m.value('toolgate_in_flight_batches'), 0)
  }
})
