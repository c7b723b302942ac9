/**
 * A streaming batch held for approvals: `batch.awaiting_approval`, then the
 * decisions and the batch's events as they happen, then `batch.completed`,
 * whichever request decides.
 */
import t from 'tap'
import { post } from '../helper.js'
import { type SseEvent, ssePost } from '../schedule/harness.js'
import { approvalApp, decide, newRun } from './helpers.js'

t.test('a stream stays open across the wait and ends with the completed answer of the deciding request', async (t) => {
  const { app, ex } = await approvalApp(t)
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const runId = await newRun(app)
  const res = await ssePost(`${base}/v1/runs/${runId}/batches`, {
    batchId: 'b1',
    calls: [{ id: 'a', name: 'look', arguments: { x: 1 } }, { id: 'b', name: 'mail', arguments: { k: 'ann' } }, { id: 'c', name: 'mail', arguments: { k: 'bob' } }]
  })
  t.equal(res.status, 200)
  const seen: SseEvent[] = []
  const next = async (): Promise<SseEvent> => {
    const { value, done } = await res.events.next()
    if (done === true) throw new Error('the stream ended early')
    seen.push(value)
    return value
  }
  t.same([(await next()).type, (await next()).type], ['batch.started', 'call.awaiting_approval'])
  await next()
  const awaiting = await next()
  t.equal(awaiting.type, 'batch.awaiting_approval')
  t.equal((awaiting.data as any).state, 'awaiting_approval')
  t.same((awaiting.data as any).approvals.map((a: any) => a.callId), ['b', 'c'])

  const first = await decide(app, runId, 'b1', [{ callId: 'b', approve: false, reason: 'no' }])
  t.equal(first.status, 202)
  const denied = await next()
  t.same([denied.type, (denied.data as any).callId], ['call.denied', 'b'], 'a decision reaches the stream as it happens')
  t.equal(ex.calls.length, 0)

  const done = await decide(app, runId, 'b1', [{ callId: 'c', approve: true }])
  t.equal(done.status, 200)
  const rest: SseEvent[] = []
  for (;;) {
    const { value, done: ended } = await res.events.next()
    if (ended === true) break
    rest.push(value)
  }
  t.same(rest.map((e) => e.type), ['call.approved', 'batch.completed'])
  t.same(rest.at(-1)!.data, done.body, 'the stream ends with the answer the deciding request got')
  const seqs = [...seen, ...rest].filter((e) => e.type !== 'batch.awaiting_approval' && e.type !== 'batch.completed').map((e) => (e.data as any).seq)
  t.same(seqs, [1, 2, 3, 4, 5], 'every event once, in order')
  t.equal(app.services.approvals.waiters.size, 0, 'the stream let go of its subscription')
  const again = await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b2', calls: [] })
  t.equal(again.status, 200)
})

t.test('a stream of a waiting batch ends when its run is cancelled, with the cancelled answer', async (t) => {
  const { app } = await approvalApp(t)
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const runId = await newRun(app)
  const res = await ssePost(`${base}/v1/runs/${runId}/batches`, { batchId: 'b1', calls: [{ id: 'b', name: 'mail', arguments: { k: 'ann' } }] })
  for (;;) {
    const { value } = await res.events.next()
    if (value?.type === 'batch.awaiting_approval') break
  }
  await post(app, `/v1/runs/${runId}/cancel`, {})
  const rest: SseEvent[] = []
  for await (const e of res.events) rest.push(e)
  const last = rest.at(-1)!
  t.equal(last.type, 'batch.completed')
  t.same((last.data as any).results.map((r: any) => r.status), ['cancelled'])
})
