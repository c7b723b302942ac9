/**
 * The worked cases of seed/tool-execution.md ("Ordered execution epochs"),
 * through the whole app against a real executor.
 */
import t from 'tap'
import type { FastifyReply } from 'fastify'
import { buildTestApp, post, startExecutor, tool, type ExecutorCall, type TestExecutor } from '../helper.js'
import type { BatchResponse } from '../../src/model/result.js'
import { type SseEvent, callGates, collect, eventOf, responseOf, ssePost, waitFor } from './harness.js'

type Tap = Parameters<typeof buildTestApp>[0]

/**
 * Tools of every scheduling kind, on one executor that fails on demand
 * (`fault` argument) and holds a call while the test keeps its gate shut.
 */
async function setup (t: Tap) {
  const ex = await startExecutor(t)
  const { hold, waitFor: held } = callGates()
  const behaviour = async (call: ExecutorCall, _req: unknown, reply: FastifyReply): Promise<unknown> => {
    await held(call)
    if (call.arguments.fault === '500') return reply.code(500).send({ error: 'boom' })
    if (call.arguments.fault === 'destroy') {
      reply.raw.destroy()
      return undefined
    }
    return { content: `did ${call.callId}` }
  }
  const tools = [
    tool('look', ex.url, { readOnly: true }),
    tool('peek', ex.url, { readOnly: true, conflictKey: 'k:{/k}' }),
    tool('scan', ex.url, { readOnly: true, execution: 'sequential' }),
    tool('put', ex.url, { conflictKey: 'k:{/k}' }),
    tool('push', ex.url)
  ]
  for (const { name } of tools) ex.on(name, behaviour)
  const { app } = await buildTestApp(t, { tools })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  return { ex, app, base, hold }
}

// One app and one executor for the file (each test has its own run): building an app is the slow part.
const { ex, app, base, hold } = await setup(t)

const call = (id: string, name: string, args: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ id, name, arguments: { ...args, x: Number(id.replace(/\D/g, '')) || 0 } })

const statuses = (body: BatchResponse): string[][] => body.results.map((r) => [r.callId, r.status])
const seen = (ex: TestExecutor, runId: string): string[] => ex.calls.filter((c) => c.runId === runId).map((c) => c.callId)
const rec = (ex: TestExecutor, runId: string, id: string): ExecutorCall => ex.calls.find((c) => c.runId === runId && c.callId === id)!
const overlap = (a: ExecutorCall, b: ExecutorCall): boolean => a.startedAt < b.endedAt! && b.startedAt < a.endedAt!

t.test('a sequential call between parallel runs is a barrier, not a switch that serializes the whole turn', async (t) => {
  await post(app, '/v1/runs', { runId: 'seq', toolExecution: 'safeParallel' })
  // Each pair is held until both of it arrived, which only happens if they overlap.
  const pairs = [['r1', 'r2'], ['r4', 'r5']] as const
  const gates = new Map(pairs.flat().map((id) => [id, hold('seq', id)]))
  const pending = post(app, '/v1/runs/seq/batches', {
    calls: [call('r1', 'look'), call('r2', 'look'), call('s3', 'scan'), call('r4', 'look'), call('r5', 'look')]
  })
  for (const pair of pairs) {
    await waitFor(() => pair.every((id) => seen(ex, 'seq').includes(id)), `${pair.join(' and ')} to run together`)
    for (const id of pair) gates.get(id)!.open()
  }
  const res = await pending
  t.equal(res.status, 200)
  const body: BatchResponse = res.body
  t.strictSame(body.results.map((r) => r.details.epoch), [0, 0, 1, 2, 2])
  t.strictSame(statuses(body).map(([, s]) => s), ['ok', 'ok', 'ok', 'ok', 'ok'])
  const r = (id: string): ExecutorCall => rec(ex, 'seq', id)
  const s3 = r('s3')
  for (const id of ['r1', 'r2']) t.ok(r(id).endedAt! <= s3.startedAt, `${id} settled before the barrier started`)
  for (const id of ['r4', 'r5']) t.ok(r(id).startedAt >= s3.endedAt!, `${id} started after the barrier settled`)
  t.ok(overlap(r('r1'), r('r2')) && overlap(r('r4'), r('r5')), 'eligible calls on each side overlap')
})

t.test('completion events keep real completion order while results stay in source order', async (t) => {
  await post(app, '/v1/runs', { runId: 'order', events: 'lifecycle' })
  const gates = { a: hold('order', 'a'), b: hold('order', 'b'), c: hold('order', 'c') }
  const res = await ssePost(`${base}/v1/runs/order/batches`, { calls: [call('a', 'look'), call('b', 'look'), call('c', 'look')] })
  t.equal(res.status, 200)
  await waitFor(() => seen(ex, 'order').length === 3, 'the three reads to start')
  const streamed: SseEvent[] = []
  // Release in the order c, a, b, each once the previous completion has been seen.
  for (const id of ['c', 'a', 'b'] as const) {
    gates[id].open()
    for (;;) {
      const { value, done } = await res.events.next()
      if (done === true) throw new Error('the stream ended early')
      streamed.push(value)
      if (value.type === 'call.completed' && eventOf(value).callId === id) break
    }
  }
  streamed.push(...await collect(res.events))
  const completed = streamed.filter((e) => e.type === 'call.completed').map((e) => eventOf(e).callId)
  t.strictSame(completed, ['c', 'a', 'b'], 'call.completed in completion order')
  const response = responseOf(streamed)
  t.strictSame(response.results.map((r) => r.callId), ['a', 'b', 'c'], 'results in source order')
  t.strictSame(response.events.filter((e) => e.type === 'call.completed').map((e) => e.callId), ['c', 'a', 'b'], 'the JSON events agree')
  const seqs = response.events.map((e) => e.seq)
  t.strictSame(seqs, seqs.map((_, i) => i + 1), 'seq counts 1, 2, 3... in the order things happened')
})

t.test('a keyed uncertain write blocks later writes with its key, and only those', async (t) => {
  await post(app, '/v1/runs', { runId: 'keyed', toolExecution: 'parallel', maxConcurrentTools: 1 })
  const res = await post(app, '/v1/runs/keyed/batches', {
    calls: [
      call('w1', 'put', { k: 'a', fault: '500' }),
      call('w2', 'put', { k: 'a' }),
      call('w3', 'put', { k: 'b' }),
      call('r4', 'peek', { k: 'a' }),
      call('w5', 'push'),
      call('w6', 'put', { k: 'a' })
    ]
  })
  t.equal(res.status, 200)
  t.strictSame(statuses(res.body), [['w1', 'uncertain'], ['w2', 'blocked'], ['w3', 'ok'], ['r4', 'ok'], ['w5', 'ok'], ['w6', 'blocked']])
  t.strictSame(seen(ex, 'keyed'), ['w1', 'w3', 'r4', 'w5'], 'blocked writes never reach the executor')
  const [w1, w2] = res.body.results
  t.equal(w2.details.blockedBy, 'w1')
  t.equal(JSON.parse(w2.content).blockedBy, 'w1')
  t.equal(w1.isError, true)
  t.match(JSON.parse(w1.content).message, /outcome of this call is unknown/, 'the model is told the outcome is unknown')
  t.match(JSON.parse(w1.content).message, /Repeating the call may apply it twice/, 'and that repeating it may apply it twice')
})

t.test('an unkeyed uncertain write blocks every later write but no read', async (t) => {
  await post(app, '/v1/runs', { runId: 'unkeyed' })
  const res = await post(app, '/v1/runs/unkeyed/batches', {
    calls: [
      call('r0', 'look'),
      call('w1', 'push', { fault: 'destroy' }),
      call('w2', 'put', { k: 'a' }),
      call('r3', 'look'),
      call('w4', 'push'),
      call('r5', 'peek', { k: 'a' })
    ]
  })
  t.equal(res.status, 200)
  t.strictSame(statuses(res.body), [['r0', 'ok'], ['w1', 'uncertain'], ['w2', 'blocked'], ['r3', 'ok'], ['w4', 'blocked'], ['r5', 'ok']])
  const body: BatchResponse = res.body
  t.strictSame(body.results.filter((r) => r.status === 'blocked').map((r) => r.details.blockedBy), ['w1', 'w1'])
  t.strictSame(seen(ex, 'unkeyed'), ['r0', 'w1', 'r3', 'r5'])
  t.equal(res.body.continue, true, 'an uncertain write does not end the run')
})

t.test('cancellation never starts the next epoch', async (t) => {
  await post(app, '/v1/runs', { runId: 'cancel', maxConcurrentTools: 2 })
  const g1 = hold('cancel', 'r1')
  const g2 = hold('cancel', 'r2')
  const pending = post(app, '/v1/runs/cancel/batches', {
    calls: [call('r1', 'look'), call('r2', 'look'), call('r3', 'look'), call('w4', 'push'), call('r5', 'look')]
  })
  await waitFor(() => seen(ex, 'cancel').length === 2, 'the first two reads to start')
  const cancelled = await post(app, '/v1/runs/cancel/cancel', {})
  t.equal(cancelled.body.state, 'cancelled')
  g2.open()
  g1.open()
  const res = await pending
  t.strictSame(statuses(res.body), [['r1', 'ok'], ['r2', 'ok'], ['r3', 'cancelled'], ['w4', 'cancelled'], ['r5', 'cancelled']],
    'running calls settle; the rest of this epoch and the later ones never start')
  t.strictSame(seen(ex, 'cancel'), ['r1', 'r2'])
  const body: BatchResponse = res.body
  t.strictSame(body.results.slice(2).map((r) => [r.details.epoch, r.details.reason]), [[0, 'cancelled'], [1, 'cancelled'], [2, 'cancelled']])
  t.equal(res.body.continue, false)
})
