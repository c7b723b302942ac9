import t, { type Test } from 'tap'
import { buildTestApp, post, sleep, startExecutor, tool } from '../helper.js'

type Result = { status: string, details: { reason?: string } }

async function setup (t: Test, limits: Record<string, unknown>) {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('poll', ex.url, { readOnly: true, trackExactRepeats: false })] })
  const run = await post(app, '/v1/runs', { limits })
  const runId: string = run.body.runId
  let n = 0
  const batch = (count: number, usage?: unknown, name = 'look') => post(app, `/v1/runs/${runId}/batches`, {
    calls: Array.from({ length: count }, () => ({ id: `c${++n}`, name, arguments: { x: n } })),
    ...(usage === undefined ? {} : { usage })
  })
  const state = async () => (await app.inject({ url: `/v1/runs/${runId}` })).json()
  return { ex, app, runId, batch, state }
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
  const { batch, state } = await setup(t, { timeoutMs: 1000 })
  t.equal((await batch(1)).status, 200)
  await sleep(1100)
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
