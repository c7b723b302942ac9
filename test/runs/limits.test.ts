import t, { type Test } from 'tap'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { FakeClock } from '../clock.js'

type Result = { status: string, details: { reason?: string } }

async function setup (t: Test, limits: Record<string, unknown>) {
  const ex = await startExecutor(t)
  // Deadlines pass when the test moves this clock, never by waiting.
  const clock = new FakeClock()
  const { app, logs } = await buildTestApp(t, { clock, tools: [tool('look', ex.url, { readOnly: true }), tool('poll', ex.url, { readOnly: true, trackExactRepeats: false })] })
  const run = await post(app, '/v1/runs', { limits })
  const runId: string = run.body.runId
  let n = 0
  const batch = (count: number, usage?: unknown, name = 'look') => post(app, `/v1/runs/${runId}/batches`, {
    calls: Array.from({ length: count }, () => ({ id: `c${++n}`, name, arguments: { x: n } })),
    ...(usage === undefined ? {} : { usage })
  })
  const state = async () => (await app.inject({ url: `/v1/runs/${runId}` })).json()
  /** How often the run's termination was counted (by reason) and logged. */
  const reported = async (reason: string) => {
    const metrics = (await app.inject({ url: '/metrics' })).body
    const counted = new RegExp(`^toolgate_run_terminations_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(metrics)
    const lines = logs.join('').split('\n').filter((l) => l.includes('"run terminated"') && l.includes(`"runId":"${runId}"`) && l.includes(`"reason":"${reason}"`))
    return { counted: counted === null ? 0 : Number(counted[1]), logged: lines.length }
  }
  return { ex, app, runId, batch, state, reported, clock }
}

t.test('maxTurns: the batch at the limit runs, the next is refused and terminates the run', async (t) => {
  const { batch, state } = await setup(t, { maxTurns: 2 })
  t.equal((await batch(1)).status, 200)
  t.equal((await batch(1)).status, 200)
  const third = await batch(1)
  t.equal(third.status, 409)
  t.equal(third.body.code, 'run_not_active')
  t.equal(third.body.terminationReason, 'max_turns')
  const run = await state()
  t.equal(run.state, 'terminated')
  t.equal(run.terminationReason, 'max_turns')
  t.equal(run.counters.turns, 2)
})

t.test('maxTotalTokens: a batch whose usage would pass the limit is refused and terminates the run', async (t) => {
  const { batch, state, ex } = await setup(t, { maxTotalTokens: 100 })
  t.equal((await batch(1, { inputTokens: 60, outputTokens: 40 })).status, 200, 'exactly at the limit passes')
  const over = await batch(1, { inputTokens: 1 })
  t.equal(over.status, 409)
  t.equal(over.body.terminationReason, 'max_total_tokens')
  t.equal((await state()).counters.totalTokens, 100)
  t.equal(ex.calls.length, 1)
})

t.test('maxToolCalls: calls beyond the limit are terminated and the run ends with max_tool_calls', async (t) => {
  const { batch, state, ex } = await setup(t, { maxToolCalls: 3 })
  const first = await batch(2)
  t.same(first.body.results.map((r: Result) => r.status), ['ok', 'ok'])
  const second = await batch(3)
  t.same(second.body.results.map((r: Result) => r.status), ['ok', 'terminated', 'terminated'])
  t.same(second.body.results.slice(1).map((r: Result) => r.details.reason), ['max_tool_calls', 'max_tool_calls'])
  t.equal(second.body.continue, false)
  t.same(second.body.run, { state: 'terminated', terminationReason: 'max_tool_calls' })
  t.equal(ex.calls.length, 3)
  t.equal((await state()).counters.toolCalls, 3)
})

t.test('run limits hold for calls exempt from repeat tracking too', async (t) => {
  const { batch, ex } = await setup(t, { maxToolCalls: 2 })
  const res = await batch(3, undefined, 'poll')
  t.same(res.body.results.map((r: Result) => r.status), ['ok', 'ok', 'terminated'])
  t.equal(ex.calls.length, 2)
})

t.test('timeoutMs: a batch after the deadline is refused and the run ends with timeout', async (t) => {
  const { batch, state, clock } = await setup(t, { timeoutMs: 1000 })
  t.equal((await batch(1)).status, 200)
  clock.advance(999)
  t.equal((await batch(1)).status, 200, 'a moment before the deadline: runs')
  clock.advance(1)
  const late = await batch(1)
  t.equal(late.status, 409)
  t.equal(late.body.terminationReason, 'timeout')
  t.equal((await state()).state, 'terminated')
})

t.test('counters add up across batches', async (t) => {
  const { batch, state } = await setup(t, {})
  await batch(2, { inputTokens: 10, outputTokens: 5 })
  await batch(3, { inputTokens: 1 })
  const run = await state()
  t.same(run.counters, { turns: 2, toolCalls: 5, totalTokens: 16 })
})

t.test('a batch refused because it would pass a limit terminates the run once, counted and logged like any termination', async (t) => {
  for (const [limits, usage, reason] of [
    [{ maxTurns: 1 }, undefined, 'max_turns'],
    [{ maxTotalTokens: 5 }, { inputTokens: 10 }, 'max_total_tokens']
  ] as const) {
    const { batch, reported } = await setup(t, limits)
    if (reason === 'max_turns') t.equal((await batch(1)).status, 200)
    t.equal((await batch(1, usage)).status, 409, reason)
    t.same(await reported(reason), { counted: 1, logged: 1 }, `${reason}: counted once and logged once`)
    t.equal((await batch(1, usage)).status, 409, `${reason}: another batch is refused`)
    t.same(await reported(reason), { counted: 1, logged: 1 }, `${reason}: and reported no second time`)
  }
})

t.test('timeoutMs: an idle run past its deadline reads terminated by timeout, and a message or a cancel after it finds it so', async (t) => {
  const { app, runId, state, reported, ex, clock } = await setup(t, { timeoutMs: 200 })
  clock.advance(199)
  t.equal((await state()).state, 'active', 'active before the deadline')
  clock.advance(1)
  const run = await state()
  t.equal(run.state, 'terminated', 'read after the deadline, with no batch sent')
  t.equal(run.terminationReason, 'timeout')
  const summary = (await app.inject({ url: `/v1/runs/${runId}/summary` })).json()
  t.equal(summary.state, 'terminated', 'the summary agrees')
  const message = await post(app, `/v1/runs/${runId}/messages`, { kind: 'steering' })
  t.equal(message.status, 409)
  t.match(message.body, { code: 'run_not_active', terminationReason: 'timeout' })
  const cancel = await post(app, `/v1/runs/${runId}/cancel`, {})
  t.equal(cancel.status, 200)
  t.match(cancel.body, { state: 'terminated', terminationReason: 'timeout' }, 'a cancel after the deadline leaves the timeout as it is')
  t.same(await reported('timeout'), { counted: 1, logged: 1 }, 'the termination is counted and logged once')
  t.equal(ex.calls.length, 0)
})

t.test('timeoutMs: a cancel or a message that is the first to touch a run past its deadline finds it timed out', async (t) => {
  for (const route of ['cancel', 'messages'] as const) {
    const { app, runId, reported, clock } = await setup(t, { timeoutMs: 100 })
    clock.advance(100)
    const res = await post(app, `/v1/runs/${runId}/${route}`, route === 'cancel' ? {} : { kind: 'follow_up' })
    if (route === 'cancel') t.match(res.body, { state: 'terminated', terminationReason: 'timeout' }, 'cancel answers the run as the timeout left it')
    else t.match(res.body, { code: 'run_not_active', terminationReason: 'timeout' }, 'a message is refused: the run timed out')
    t.same(await reported('timeout'), { counted: 1, logged: 1 }, `${route}: reported once`)
  }
})
