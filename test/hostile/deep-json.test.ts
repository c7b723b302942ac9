/**
 * JSON nested hundreds of thousands of levels deep, in a request body or in
 * a call's arguments string, is refused from its text (SPEC sections 9 and
 * 19): parsing it first held the event loop for a third of a second or more,
 * only to refuse it afterwards.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import t from 'tap'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'

t.test('a body or an arguments string nested 450,000 deep is refused without holding the event loop to parse it', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  t.equal((await post(app, '/v1/runs', { runId: 'deep' })).status, 201)
  const levels = 450_000
  const nested = '['.repeat(levels) + ']'.repeat(levels)
  const send = async (): Promise<[Awaited<ReturnType<typeof app.inject>>, Awaited<ReturnType<typeof post>>]> => [
    await app.inject({ method: 'POST', url: '/v1/runs/deep/batches', payload: `{"calls":[{"id":"c1","name":"look","arguments":{"x":${nested}}}]}`, headers: { 'content-type': 'application/json' } }),
    await post(app, '/v1/runs/deep/batches', { calls: [{ id: 'c1', name: 'look', arguments: `{"x":${nested}}` }] })
  ]
  // Once first, so that what is measured is the refusal, not the first compile of the code on its way.
  await send()
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const [deepBody, deepArgs] = await send()
  delay.disable()
  t.equal(deepBody.statusCode, 400)
  t.match(JSON.parse(deepBody.body), { code: 'invalid_request', detail: /nests deeper than 64 levels/ })
  t.equal(deepArgs.status, 200)
  t.equal(deepArgs.body.results[0].status, 'rejected')
  t.match(deepArgs.body.results[0].details, { reason: 'invalid_arguments' })
  t.equal(ex.calls.length, 0, 'nothing was sent')
  // Parsing either text took 300 ms or more on this project's machine before it was refused; reading it, a few.
  t.ok(delay.max / 1e6 < 150, `the event loop was never held long: longest delay ${(delay.max / 1e6).toFixed(1)} ms`)
})
