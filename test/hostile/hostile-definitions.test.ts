/**
 * A tool's own definition cannot stall the service: hostile schema patterns
 * match in linear time, patterns that cannot are refused at registration,
 * projections are bounded and evaluated apart from the event loop, and a
 * slow preparation is reported.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import t from 'tap'
import { buildTestApp, get, post, sleep, startExecutor, tool } from '../helper.js'
import { REDOS_CASES } from './redos-cases.js'

const CANARY = 'canary-argument-value-7781'

t.test('a pattern RE2 cannot match in linear time is refused with 400 invalid_tool naming its path', async t => {
  const { app } = await buildTestApp(t)
  const ex = await startExecutor(t)
  const def = tool('lookup', ex.url, {
    inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a)\\1$' } }, patternProperties: { '^(?=x)': {} } }
  })
  const res = await app.inject({ method: 'PUT', url: '/v1/tools/lookup', payload: def })
  t.equal(res.statusCode, 400)
  const problem = res.json()
  t.equal(problem.code, 'invalid_tool')
  t.match(problem.problems, [/^\/inputSchema\/patternProperties\/\^\(\?=x\): pattern .* cannot be matched in linear time/, /^\/inputSchema\/properties\/s\/pattern: /])
  t.equal((await get(app, '/v1/tools/lookup')).status, 404, 'nothing was registered')
})

t.test('batches of 10,000-character hostile strings against catastrophic patterns answer, and another run is served meanwhile', async t => {
  const { app } = await buildTestApp(t)
  const ex = await startExecutor(t)
  const tools = REDOS_CASES.map(({ pattern }, i) => tool(`redos${i}`, ex.url, {
    readOnly: true,
    inputSchema: { type: 'object', properties: { s: { type: 'string', pattern } }, required: ['s'] }
  }))
  tools.push(tool('keyed', ex.url, {
    readOnly: true,
    inputSchema: { type: 'object', patternProperties: { '^(a+)+$': { type: 'integer' } } }
  }))
  tools.push(tool('plain', ex.url, { readOnly: true }))
  app.services.tools.putAll(tools)

  const hostileCalls = REDOS_CASES.map(({ hostile }, i) => ({ id: `h${i}`, name: `redos${i}`, arguments: { s: hostile } }))
  hostileCalls.push({ id: 'hk', name: 'keyed', arguments: { ['a'.repeat(10_000) + '!']: 'not checked: the key does not match' } as never })
  const matching = { id: 'ok', name: 'redos0', arguments: { s: 'a'.repeat(10_000) } }

  const runA = (await post(app, '/v1/runs', {})).body.runId
  const runB = (await post(app, '/v1/runs', {})).body.runId
  // Several hostile batches in flight at once, and an ordinary batch of another run among them.
  const [first, second, other] = await Promise.all([
    post(app, `/v1/runs/${runA}/batches`, { calls: [...hostileCalls, matching] }),
    post(app, `/v1/runs/${runA}-missing/batches`, { calls: hostileCalls }),
    post(app, `/v1/runs/${runB}/batches`, { calls: [{ id: 'p1', name: 'plain', arguments: { x: 1 } }] })
  ])
  t.equal(first.status, 200)
  const byId = new Map<string, { status: string, details: { reason?: string } }>(first.body.results.map((r: { callId: string }) => [r.callId, r]))
  for (let i = 0; i < REDOS_CASES.length; i++) {
    t.equal(byId.get(`h${i}`)?.status, 'rejected', REDOS_CASES[i]!.pattern)
    t.equal(byId.get(`h${i}`)?.details.reason, 'invalid_arguments')
  }
  t.equal(byId.get('hk')?.status, 'ok', 'a key the pattern does not match is not constrained by it')
  t.equal(byId.get('ok')?.status, 'ok', 'a string the pattern matches passes')
  t.equal(second.status, 404)
  t.equal(other.status, 200)
  t.equal(other.body.results[0].status, 'ok')
  t.same(ex.calls.map((c) => c.callId).sort(), ['hk', 'ok', 'p1'])
})

t.test('a projection with a catastrophic regex answers; one that blows its bounds is projection_failed', async t => {
  const { app } = await buildTestApp(t)
  const ex = await startExecutor(t)
  ex.on('note', () => ({ status: 'committed', result: { text: 'a'.repeat(10_000) + '!' } }))
  ex.on('shout', () => ({ status: 'committed', result: { text: 'x' } }))
  app.services.tools.putAll([
    tool('note', ex.url, { action: { projection: "{ 'status': receipt.status, 'all_a': $exists($match(receipt.result.text, /^(a+)+$/)) }" } }),
    tool('shout', ex.url, { action: { projection: "{ 'loud': $length($pad(receipt.result.text, 100000000)) }" } }),
    tool('plain', ex.url, { readOnly: true })
  ])
  const ok = await post(app, (await runPath(app)), { calls: [{ id: 'n1', name: 'note', arguments: { k: CANARY } }] })
  t.equal(ok.body.results[0].status, 'ok')
  t.equal(ok.body.results[0].content, '{"status":"committed","all_a":false}')

  const runId = (await post(app, '/v1/runs', {})).body.runId
  const failed = await post(app, `/v1/runs/${runId}/batches`, { calls: [{ id: 's1', name: 'shout', arguments: {} }, { id: 's2', name: 'plain', arguments: {} }] })
  t.equal(failed.body.results[0].status, 'projection_failed')
  t.equal(failed.body.results[0].content, '{"error":"projection_failed"}')
  t.equal(failed.body.results[0].details.receipt.status, 'committed', 'the canonical receipt is kept')
  t.equal(failed.body.continue, false)
  t.equal(failed.body.run.terminationReason, 'projection_failed')
})

t.test('a projection that sorts 50,000 items is projection_failed at its deadline, and the service answers meanwhile', async t => {
  const { app } = await buildTestApp(t)
  const ex = await startExecutor(t)
  const items = Array.from({ length: 50_000 }, (_, i) => (i * 7919) % 50_000)
  ex.on('sorter', () => ({ status: 'committed', result: { items } }))
  app.services.tools.putAll([tool('sorter', ex.url, { action: { projection: "{ 'first': $sort(receipt.result.items)[0] }" } })])
  const path = await runPath(app)

  // The longest the service went without answering /healthz, asked every 10 ms, and its event loop's longest delay.
  let stop = false
  let longestGapMs = 0
  const healthStatuses: number[] = []
  const health = (async () => {
    let last = performance.now()
    while (!stop) {
      healthStatuses.push((await get(app, '/healthz')).status)
      longestGapMs = Math.max(longestGapMs, performance.now() - last)
      last = performance.now()
      await sleep(10)
    }
  })()
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const started = performance.now()
  const res = await post(app, path, { calls: [{ id: 's1', name: 'sorter', arguments: {} }] })
  const tookMs = performance.now() - started
  delay.disable()
  stop = true
  await health

  t.equal(res.body.results[0].status, 'projection_failed')
  t.equal(res.body.results[0].details.projectionProblem, 'threw')
  t.equal(res.body.results[0].details.receipt.status, 'committed', 'the canonical receipt is kept')
  t.equal(res.body.run.terminationReason, 'projection_failed')
  // Generous bounds: the machine may be shared and loaded. With the projection in the service's thread, this
  // batch held the loop over two minutes while the heap grew to 3.8 GB, and the process aborted out of memory.
  t.ok(tookMs < 10_000, `the batch was answered after ${tookMs.toFixed(0)} ms, under 10000`)
  t.ok(delay.max / 1e6 < 500, `the event loop was held at most ${(delay.max / 1e6).toFixed(1)} ms, under 500`)
  t.ok(longestGapMs < 500, `/healthz went unanswered at most ${longestGapMs.toFixed(0)} ms, under 500`)
  t.ok(healthStatuses.length > 0 && healthStatuses.every((s) => s === 200), `/healthz answered 200 all ${healthStatuses.length} times`)
})

t.test('a tool whose projection holds a regex RE2 cannot match is refused at registration', async t => {
  const { app } = await buildTestApp(t)
  const ex = await startExecutor(t)
  const res = await app.inject({ method: 'PUT', url: '/v1/tools/note', payload: tool('note', ex.url, { action: { projection: "{ 'm': $match(receipt.status, /(c)\\1/) }" } }) })
  t.equal(res.statusCode, 400)
  t.match(res.json().problems, [/^\/action\/projection: Invalid projection: pattern .* cannot be matched in linear time/])
})

t.test('a batch whose preparation passes TOOLGATE_SLOW_PREPARATION_MS logs a warning with ids and counts, never arguments', async t => {
  const authorizer = async (): Promise<{ ok: true, value: undefined }> => {
    // The external authorizer's answer is part of preparation: a slow one makes a slow preparation.
    await new Promise((resolve) => setTimeout(resolve, 20))
    return { ok: true, value: undefined }
  }
  const { app, logs } = await buildTestApp(t, { config: { slowPreparationMs: 5 }, authorizer })
  const ex = await startExecutor(t)
  app.services.tools.putAll([tool('plain', ex.url, { readOnly: true })])
  const runId = (await post(app, '/v1/runs', {})).body.runId
  const res = await post(app, `/v1/runs/${runId}/batches`, { batchId: 'slow-1', calls: [{ id: 'c1', name: 'plain', arguments: { k: CANARY } }] })
  t.equal(res.body.results[0].status, 'ok')
  const warnings = logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'slow batch preparation')
  t.equal(warnings.length, 1)
  t.match(warnings[0], { level: 40, runId, batchId: 'slow-1', calls: 1, durationMs: Number })
  t.ok(warnings[0].durationMs >= 5)
  t.notOk(logs.join('\n').includes(CANARY), 'no argument in any log line')
})

t.test('the event-loop delay is exported for operators', async t => {
  const { app } = await buildTestApp(t)
  const metrics = await get(app, '/metrics')
  t.match(metrics.body, /^nodejs_eventloop_lag_p99_seconds /m)
  t.match(metrics.body, /^nodejs_eventloop_lag_max_seconds /m)
})

async function runPath (app: Parameters<typeof post>[0]): Promise<string> {
  return `/v1/runs/${(await post(app, '/v1/runs', {})).body.runId}/batches`
}
