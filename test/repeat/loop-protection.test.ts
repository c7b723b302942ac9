import t, { type Test } from 'tap'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'

type Result = { callId: string, status: string, details: { reason?: string } }

async function setup (t: Test, runOptions: Record<string, unknown> = {}) {
  const ex = await startExecutor(t)
  const { app, logs } = await buildTestApp(t, {
    tools: [
      tool('look', ex.url, { readOnly: true }),
      tool('poll', ex.url, { readOnly: true, trackExactRepeats: false }),
      tool('move', ex.url)
    ]
  })
  const run = await post(app, '/v1/runs', { events: 'lifecycle', ...runOptions })
  const runId: string = run.body.runId
  let n = 0
  const batch = async (calls: Array<[string, unknown]>) => {
    const res = await post(app, `/v1/runs/${runId}/batches`, { calls: calls.map(([name, args]) => ({ id: `c${++n}`, name, arguments: args })) })
    return res
  }
  return { ex, app, logs, runId, batch }
}

const same = (count: number, name = 'look', args: unknown = { x: 1 }): Array<[string, unknown]> => Array.from({ length: count }, () => [name, args])

t.test('the third identical call in a batch is dispatched with one advisory and one policy message', async (t) => {
  const { batch, ex } = await setup(t)
  const res = await batch(same(4))
  t.equal(res.status, 200)
  t.same(res.body.results.map((r: Result) => r.status), ['ok', 'ok', 'ok', 'ok'])
  t.equal(ex.calls.length, 4)
  t.equal(res.body.policyMessages.length, 1, 'one message per streak, not one per repeat')
  const message = res.body.policyMessages[0]
  t.equal(message.type, 'agent_policy')
  t.ok(message.content.length <= 512)
  t.match(message.content, /look/)
  t.match(message.content, /3/)
  const repeats = res.body.events.filter((e: { type: string }) => e.type === 'tool.repeat_detected')
  t.same(repeats.map((e: { action: string, count: number, callId: string }) => [e.action, e.count, e.callId]), [['advisory', 3, 'c3']])
  t.equal(res.body.continue, true)
})

t.test('the eighth identical call across eight one-call batches is terminated without reaching the executor', async (t) => {
  const { batch, ex, app, runId } = await setup(t)
  for (let i = 1; i <= 7; i++) {
    const res = await batch(same(1))
    t.equal(res.body.results[0].status, 'ok', `batch ${i} runs`)
  }
  const eighth = await batch(same(1))
  t.equal(eighth.body.results[0].status, 'terminated')
  t.equal(eighth.body.results[0].details.reason, 'exact_repeat')
  t.equal(eighth.body.continue, false)
  t.same(eighth.body.run, { state: 'terminated', terminationReason: 'exact_repeat' })
  t.equal(ex.calls.length, 7, 'the terminating call never reached the executor')
  const after = await batch(same(1, 'look', { x: 2 }))
  t.equal(after.status, 409)
  t.equal(after.body.code, 'run_not_active')
  t.equal(after.body.terminationReason, 'exact_repeat')
  const run = await app.inject({ url: `/v1/runs/${runId}` })
  t.equal(run.json().state, 'terminated')
})

t.test('termination in the middle of a batch runs the calls before it and terminates the rest', async (t) => {
  const { batch, ex } = await setup(t)
  const res = await batch([['move', { x: 0 }], ...same(8), ['move', { x: 9 }]])
  t.same(res.body.results.map((r: Result) => r.status), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'terminated', 'terminated'])
  t.same(res.body.results.slice(8).map((r: Result) => r.details.reason), ['exact_repeat', 'exact_repeat'])
  t.equal(ex.calls.length, 8, 'the first move and seven looks ran; the eighth look and the last move never did')
  t.notOk(ex.calls.some((c) => c.arguments.x === 9))
  t.equal(res.body.continue, false)
})

t.test('an exempt call in the middle of a streak neither advances nor resets it', async (t) => {
  const { batch } = await setup(t, { limits: { exactToolRepeatTerminationThreshold: 4 } })
  const res = await batch([['look', { x: 1 }], ['poll', {}], ['look', { x: 1 }], ['poll', {}], ['poll', {}], ['look', { x: 1 }], ['look', { x: 1 }]])
  t.same(res.body.results.map((r: Result) => r.status), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'terminated'])
})

t.test('a different call resets the count to one', async (t) => {
  const { batch } = await setup(t, { limits: { exactToolRepeatAdvisoryThreshold: 2, exactToolRepeatTerminationThreshold: 3 } })
  const res = await batch([['look', { x: 1 }], ['look', { x: 1 }], ['look', { x: 2 }], ['look', { x: 1 }], ['look', { x: 1 }]])
  t.same(res.body.results.map((r: Result) => r.status), ['ok', 'ok', 'ok', 'ok', 'ok'])
  t.equal(res.body.policyMessages.length, 2, 'a new streak may advise again')
})

t.test('the same arguments in another key order or as a JSON string are the same call', async (t) => {
  const { batch } = await setup(t, { limits: { exactToolRepeatTerminationThreshold: 3 } })
  const res = await batch([['move', { x: 1, k: 'a' }], ['move', '{"k":"a","x":1}'], ['move', { k: 'a', x: 1 }]])
  t.same(res.body.results.map((r: Result) => r.status), ['ok', 'ok', 'terminated'])
})

t.test('a model looping on the same rejected call is caught too', async (t) => {
  const { batch, ex } = await setup(t, { limits: { exactToolRepeatTerminationThreshold: 3 } })
  const res = await batch([['nosuch', '{"broken'], ['nosuch', '{"broken'], ['nosuch', '{"broken']])
  t.same(res.body.results.map((r: Result) => r.status), ['rejected', 'rejected', 'terminated'])
  t.equal(ex.calls.length, 0)
})

t.test('a steering or follow-up message resets the streak; nothing else does', async (t) => {
  const { batch, app, runId } = await setup(t, { limits: { exactToolRepeatTerminationThreshold: 3 } })
  await batch(same(2))
  const msg = await post(app, `/v1/runs/${runId}/messages`, { kind: 'steering' })
  t.equal(msg.status, 200)
  const after = await batch(same(2))
  t.same(after.body.results.map((r: Result) => r.status), ['ok', 'ok'], 'the streak started over')
  await post(app, `/v1/runs/${runId}/messages`, { kind: 'follow_up' })
  const again = await batch(same(3))
  t.same(again.body.results.map((r: Result) => r.status), ['ok', 'ok', 'terminated'])
})

t.test('a threshold of 0 disables its action', async (t) => {
  const { batch, ex } = await setup(t, { limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0 } })
  const res = await batch(same(12))
  t.equal(res.body.results.filter((r: Result) => r.status === 'ok').length, 12)
  t.same(res.body.policyMessages, [])
  t.equal(ex.calls.length, 12)
})

t.test('the policy message and the events never carry the arguments', async (t) => {
  const secret = 'canary-7f3a9c-secret'
  const { batch, logs } = await setup(t, { limits: { exactToolRepeatTerminationThreshold: 4 } })
  const res = await batch(same(4, 'look', { x: 1, secret }))
  t.equal(res.body.results[3].status, 'terminated')
  t.notMatch(JSON.stringify(res.body.policyMessages), secret)
  t.notMatch(JSON.stringify(res.body.events), secret)
  t.notMatch(logs.join(''), secret)
})
