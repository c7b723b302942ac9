import t, { type Test } from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'

type Result = { callId: string, status: string, content: string, details: { reason?: string } }
type Event = { type: string, kind?: string, action?: string, count?: number, callId?: string, tool?: string }

async function setup (t: Test, runOptions: Record<string, unknown> = {}, config: Record<string, unknown> = {}) {
  const ex = await startExecutor(t)
  const { app, logs } = await buildTestApp(t, {
    config,
    tools: [
      tool('look', ex.url, { readOnly: true }),
      tool('move', ex.url),
      tool('write', ex.url),
      tool('fail', ex.url),
      tool('status', ex.url, { readOnly: true, trackExactRepeats: false }),
      tool('fetch', ex.url, { readOnly: true, ignoreArguments: ['/request_id', '/meta/at'] })
    ]
  })
  ex.on('fail', () => ({ content: 'the tool refused', isError: true }))
  const run = await post(app, '/v1/runs', { events: 'lifecycle', ...runOptions })
  const runId: string = run.body.runId
  let n = 0
  const batch = async (calls: Array<[string, unknown]>, ids?: string[]) =>
    await post(app, `/v1/runs/${runId}/batches`, { calls: calls.map(([name, args], i) => ({ id: ids?.[i] ?? `c${++n}`, name, arguments: args })) })
  return { ex, app, logs, runId, run: run.body, batch }
}

const statuses = (res: { body: { results: Result[] } }): string[] => res.body.results.map((r) => r.status)
const detections = (res: { body: { events: Event[] } }): Array<[string | undefined, string | undefined, number | undefined, string | undefined]> =>
  res.body.events.filter((e) => e.type === 'tool.repeat_detected').map((e) => [e.kind, e.action, e.count, e.callId])

t.test('the run answer holds the six loop limits with their defaults and takes the run\'s own', async (t) => {
  const { run } = await setup(t, { limits: { cycleTerminationRepetitions: 4, noProgressAdvisory: 0 } })
  t.match(run.limits, {
    cycleAdvisoryRepetitions: 3,
    cycleTerminationRepetitions: 4,
    consecutiveErrorAdvisory: 3,
    consecutiveErrorTermination: 10,
    noProgressAdvisory: 0,
    noProgressTermination: 30
  })
})

t.test('the server defaults of the loop limits come from its settings', async (t) => {
  const { run } = await setup(t, {}, { cycleAdvisoryRepetitions: 2, consecutiveErrorTermination: 0, noProgressTermination: 50 })
  t.match(run.limits, { cycleAdvisoryRepetitions: 2, cycleTerminationRepetitions: 6, consecutiveErrorTermination: 0, noProgressTermination: 50 })
})

t.test('a bad loop limit is refused with 400 invalid_request', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url)] })
  for (const limits of [{ cycleAdvisoryRepetitions: -1 }, { noProgressTermination: 'x' }, { consecutiveErrorAdvisory: 1.5 }]) {
    const res = await post(app, '/v1/runs', { limits })
    t.equal(res.status, 400, JSON.stringify(limits))
    t.equal(res.body.code, 'invalid_request')
  }
})

t.test('a look-move cycle across turns advises at its third repetition and terminates at its sixth without dispatching it', async (t) => {
  const { batch, ex, app, runId } = await setup(t)
  const turn = async () => await batch([['look', { x: 1 }], ['move', { x: 2 }]])
  await turn()
  await turn()
  const third = await turn()
  t.same(statuses(third), ['ok', 'ok'])
  t.same(detections(third), [['cycle', 'advisory', 3, 'c6']])
  t.equal(third.body.policyMessages.length, 1)
  t.match(third.body.policyMessages[0].content, /Loop detected \(cycle\).*"look" → "move".*3 times/)
  await turn()
  await turn()
  t.equal(ex.calls.length, 10)
  const sixth = await turn()
  t.same(statuses(sixth), ['ok', 'terminated'])
  t.equal(sixth.body.results[1].details.reason, 'repeat_cycle')
  t.same(detections(sixth), [['cycle', 'terminated', 6, 'c12']])
  t.equal(ex.calls.length, 11, 'the move that completed the sixth repetition never reached the executor')
  t.equal(sixth.body.continue, false)
  t.same(sixth.body.run, { state: 'terminated', terminationReason: 'repeat_cycle' })
  const after = await turn()
  t.equal(after.status, 409)
  t.equal(after.body.terminationReason, 'repeat_cycle')
  t.equal((await get(app, `/v1/runs/${runId}`)).body.terminationReason, 'repeat_cycle')
})

t.test('a period-3 cycle inside one batch terminates there, and the calls after it are terminated too', async (t) => {
  const { batch, ex } = await setup(t, { limits: { cycleTerminationRepetitions: 2 } })
  const res = await batch([['look', { x: 1 }], ['look', { x: 2 }], ['move', { x: 3 }], ['look', { x: 1 }], ['look', { x: 2 }], ['move', { x: 3 }], ['write', { k: 'later' }]])
  t.same(statuses(res), ['ok', 'ok', 'ok', 'ok', 'ok', 'terminated', 'terminated'])
  t.same(res.body.results.slice(5).map((r: Result) => r.details.reason), ['repeat_cycle', 'repeat_cycle'])
  t.equal(ex.calls.length, 5)
})

t.test('exempt calls inside a cycle neither advance nor break it', async (t) => {
  const { batch } = await setup(t, { limits: { cycleAdvisoryRepetitions: 2, cycleTerminationRepetitions: 0 } })
  const res = await batch([['look', { x: 1 }], ['status', {}], ['move', { x: 2 }], ['status', {}], ['look', { x: 1 }], ['status', {}], ['move', { x: 2 }]])
  t.same(detections(res), [['cycle', 'advisory', 2, 'c7']])
})

t.test('ten failing calls in a row terminate the run with consecutive_errors, and later calls are not started', async (t) => {
  const { batch, ex } = await setup(t)
  const first = await batch(Array.from({ length: 4 }, (_, i) => ['fail', { x: i }] as [string, unknown]))
  t.same(statuses(first), ['error', 'error', 'error', 'error'])
  t.same(detections(first), [['errors', 'advisory', 3, 'c3']])
  t.match(first.body.policyMessages[0].content, /Loop detected \(errors\).*last 3 tool calls.*"fail"/)
  // Writes are barriers: each its own epoch, so the streak is checked between them.
  const second = await batch([...Array.from({ length: 6 }, (_, i) => ['fail', { x: 10 + i }] as [string, unknown]), ['write', { k: 'a' }], ['write', { k: 'b' }]])
  t.same(statuses(second), ['error', 'error', 'error', 'error', 'error', 'error', 'terminated', 'terminated'])
  t.same(second.body.results.slice(6).map((r: Result) => r.details.reason), ['consecutive_errors', 'consecutive_errors'])
  t.same(detections(second), [['errors', 'terminated', 10, 'c10']])
  t.equal(ex.calls.length, 10, 'the two writes after the tenth failure never started')
  t.equal(second.body.continue, false)
  t.same(second.body.run, { state: 'terminated', terminationReason: 'consecutive_errors' })
  t.ok(second.body.events.some((e: Event & { reason?: string }) => e.type === 'run.terminated' && e.reason === 'consecutive_errors'))
})

t.test('rejections count as failures; an ok call breaks the streak', async (t) => {
  const { batch } = await setup(t, { limits: { consecutiveErrorTermination: 3 } })
  const res = await batch([['nosuch', { a: 1 }], ['look', { x: 'not a number' }], ['look', { x: 1 }], ['nosuch', { a: 2 }], ['fail', { x: 1 }]])
  t.same(statuses(res), ['rejected', 'rejected', 'ok', 'rejected', 'error'])
  t.equal(res.body.continue, true)
  const next = await batch([['nosuch', { a: 3 }]])
  t.same(statuses(next), ['rejected'])
  t.same(next.body.run, { state: 'terminated', terminationReason: 'consecutive_errors' })
})

t.test('a run of only rejected calls is terminated at the limit before anything of the batch is dispatched', async (t) => {
  const { batch, ex } = await setup(t, { limits: { consecutiveErrorTermination: 2 } })
  const res = await batch([['nosuch', { a: 1 }], ['nosuch', { a: 2 }], ['look', { x: 1 }]])
  t.same(statuses(res), ['rejected', 'rejected', 'terminated'])
  t.equal(ex.calls.length, 0)
})

t.test('polling that keeps answering the same thing terminates with no_progress', async (t) => {
  const { batch, ex } = await setup(t, { toolExecution: 'sequential', limits: { noProgressAdvisory: 2, noProgressTermination: 3 } })
  ex.on('status', () => ({ content: { state: 'running' } }))
  const res = await batch(Array.from({ length: 5 }, () => ['status', { job: 'j1' }] as [string, unknown]))
  t.same(statuses(res), ['ok', 'ok', 'ok', 'terminated', 'terminated'])
  t.same(res.body.results.slice(3).map((r: Result) => r.details.reason), ['no_progress', 'no_progress'])
  t.same(detections(res), [['no_progress', 'advisory', 2, 'c2'], ['no_progress', 'terminated', 3, 'c3']])
  t.match(res.body.policyMessages[0].content, /Loop detected \(no_progress\).*"status" 2 times/)
  t.equal(ex.calls.length, 3)
  t.same(res.body.run, { state: 'terminated', terminationReason: 'no_progress' })
})

t.test('polling whose answer changes never trips no_progress', async (t) => {
  const { batch, ex } = await setup(t, { limits: { noProgressAdvisory: 2, noProgressTermination: 3 } })
  let progress = 0
  ex.on('status', () => ({ content: { state: 'running', progress: progress++ } }))
  for (let i = 0; i < 8; i++) {
    const res = await batch([['status', { job: 'j1' }]])
    t.same(res.body.policyMessages, [])
    t.equal(res.body.continue, true)
  }
})

t.test('a genuine user message resets every loop streak', async (t) => {
  const { batch, app, runId } = await setup(t, { limits: { consecutiveErrorAdvisory: 3, cycleAdvisoryRepetitions: 2 } })
  await batch([['fail', { x: 1 }], ['fail', { x: 2 }], ['look', { x: 1 }], ['move', { x: 1 }], ['look', { x: 1 }]])
  t.equal((await post(app, `/v1/runs/${runId}/messages`, { kind: 'steering' })).status, 200)
  const after = await batch([['move', { x: 1 }], ['fail', { x: 3 }], ['fail', { x: 4 }]])
  t.same(after.body.policyMessages, [], 'neither the cycle nor the error streak continued')
})

t.test('ignored arguments are left out of the fingerprint but reach the executor', async (t) => {
  const { batch, ex } = await setup(t, { limits: { exactToolRepeatAdvisoryThreshold: 2, exactToolRepeatTerminationThreshold: 3 } })
  const first = await batch([['fetch', { url: 'u', request_id: 'r1', meta: { at: 1, page: 1 } }]], ['same'])
  const second = await batch([['fetch', { url: 'u', request_id: 'r2', meta: { at: 2, page: 1 } }]], ['same'])
  t.same(statuses(first), ['ok'])
  t.same(detections(second), [['exact', 'advisory', 2, 'same']])
  t.same(ex.calls.map((c) => c.arguments), [{ url: 'u', request_id: 'r1', meta: { at: 1, page: 1 } }, { url: 'u', request_id: 'r2', meta: { at: 2, page: 1 } }])
  t.equal(ex.calls[0]!.operationId, ex.calls[1]!.operationId, 'the operation id is computed without the ignored members')
  const third = await batch([['fetch', { request_id: 'r3', url: 'u', meta: { page: 1, at: 3 } }]])
  t.same(statuses(third), ['terminated'])
  t.equal(third.body.results[0].details.reason, 'exact_repeat')
})

t.test('a tool with a malformed ignoreArguments pointer is refused with invalid_tool', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t)
  const res = await app.inject({ method: 'PUT', url: '/v1/tools/bad', payload: { ...tool('bad', ex.url), ignoreArguments: ['/a~2'] } })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'invalid_tool')
  const empty = await app.inject({ method: 'PUT', url: '/v1/tools/bad', payload: { ...tool('bad', ex.url), ignoreArguments: [''] } })
  t.equal(empty.statusCode, 400)
  const good = await app.inject({ method: 'PUT', url: '/v1/tools/good', payload: { ...tool('good', ex.url), ignoreArguments: ['/request_id'] } })
  t.equal(good.statusCode, 201)
  t.same(good.json().ignoreArguments, ['/request_id'])
})

t.test('summaries count detections per kind and the metric counts them by kind and action', async (t) => {
  const { batch, app, runId } = await setup(t, { limits: { cycleAdvisoryRepetitions: 2, consecutiveErrorTermination: 4 } })
  await batch([['look', { x: 1 }], ['move', { x: 1 }], ['look', { x: 1 }], ['move', { x: 1 }]])
  await batch([['fail', { x: 1 }], ['fail', { x: 2 }], ['fail', { x: 3 }], ['fail', { x: 4 }]])
  const summary = (await get(app, `/v1/runs/${runId}/summary`)).body
  t.same(summary.loopDetections, {
    exact: { advisories: 0, terminations: 0 },
    cycle: { advisories: 1, terminations: 0 },
    errors: { advisories: 1, terminations: 1 },
    no_progress: { advisories: 0, terminations: 0 }
  })
  t.match((await get(app, '/v1/summary')).body.loopDetections.errors, { terminations: 1 })
  const metrics = (await app.inject({ url: '/metrics' })).body
  t.match(metrics, /toolgate_loop_detections_total\{kind="cycle",action="advisory"\} 1/)
  t.match(metrics, /toolgate_loop_detections_total\{kind="errors",action="terminated"\} 1/)
  t.match(metrics, /toolgate_run_terminations_total\{reason="consecutive_errors"\} 1/)
})

t.test('no argument reaches a policy message, an event, a log line or a metric, whatever the detector', async (t) => {
  const secret = 'canary-91d2e7-secret'
  const { batch, logs, app } = await setup(t, {
    toolExecution: 'sequential',
    limits: { cycleAdvisoryRepetitions: 2, consecutiveErrorAdvisory: 2, noProgressAdvisory: 2, exactToolRepeatAdvisoryThreshold: 2 }
  })
  const bodies: string[] = []
  const send = async (calls: Array<[string, unknown]>) => { const res = await batch(calls); bodies.push(JSON.stringify({ p: res.body.policyMessages, e: res.body.events })); return res }
  await send([['look', { k: secret }], ['move', { k: secret }], ['look', { k: secret }], ['move', { k: secret }]])
  await send([['fail', { k: secret }], ['fail', { k: `${secret}2` }]])
  await send([['status', { k: secret }], ['status', { k: secret }]])
  await send([['fetch', { url: secret, request_id: secret }], ['fetch', { url: secret, request_id: secret }]])
  const last = await send([['nosuch', `{"k":"${secret}"`], ['nosuch', `{"k":"${secret}"`], ['nosuch', `{"k":"${secret}"`]])
  t.equal(last.status, 200)
  const kinds = new Set(bodies.flatMap((b) => [...b.matchAll(/"kind":"(\w+)"/g)].map((m) => m[1])))
  t.same([...kinds].sort(), ['cycle', 'errors', 'exact', 'no_progress'], 'every detector fired')
  for (const body of bodies) t.notMatch(body, secret)
  t.notMatch(logs.join(''), secret)
  t.notMatch((await app.inject({ url: '/metrics' })).body, secret)
})
