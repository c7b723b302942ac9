import t from 'tap'
import { get, post } from '../helper.js'
import { type SseEvent, ssePost } from '../schedule/harness.js'
import { approvalApp, batchOf, decide, newRun } from './helpers.js'

const calls = [
  { id: 'a', name: 'mail', arguments: { k: 'ann' } },
  { id: 'b', name: 'mail', arguments: { k: 'bob' } },
  { id: 'c', name: 'note', arguments: { x: 1 } }
]

t.test('a denied call is denied with the reason, never dispatched, and blocks nothing', async (t) => {
  const { app, ex } = await approvalApp(t)
  const runId = await newRun(app)
  const held = await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls })
  t.equal(held.status, 202)
  t.same(held.body.approvals.map((a: any) => a.callId), ['a', 'b'])

  const partial = await decide(app, runId, 'b1', [{ callId: 'a', approve: false, reason: 'not this person' }])
  t.equal(partial.status, 202, 'calls remain undecided')
  t.same(partial.body.approvals.map((a: any) => a.callId), ['b'])
  t.equal(ex.calls.length, 0)

  const done = await decide(app, runId, 'b1', [{ callId: 'b', approve: true }])
  t.equal(done.status, 200)
  const [a, b, c] = done.body.results
  t.equal(a.status, 'denied')
  t.equal(a.isError, true)
  t.same(JSON.parse(a.content), { error: 'denied', message: 'Not run: a person declined this call.', reason: 'not this person' })
  t.equal(a.details.reason, 'denied')
  t.same(a.details.approval.decision, 'denied')
  t.same(a.details.approval.by, { tenant: 'default' })
  t.equal(b.status, 'ok')
  t.equal(c.status, 'ok', 'a denied write blocks nothing')
  t.same(ex.calls.map((x) => x.callId).sort(), ['b', 'c'])
  t.same(done.body.events.filter((e: any) => e.type.startsWith('call.')).map((e: any) => [e.type, e.callId]),
    [['call.awaiting_approval', 'a'], ['call.awaiting_approval', 'b'], ['call.denied', 'a'], ['call.approved', 'b']])
  const summary = await get(app, `/v1/runs/${runId}/summary`)
  t.same(summary.body.approvals, { approved: 1, denied: 1, expired: 0 })
  t.equal(summary.body.callsByStatus.denied, 1)
})

t.test('a request naming a call that is not pending changes nothing', async (t) => {
  const { app, ex } = await approvalApp(t)
  const runId = await newRun(app)
  await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls })
  for (const bad of [
    [{ callId: 'a', approve: true }, { callId: 'zzz', approve: true }],
    [{ callId: 'a', approve: true }, { callId: 'c', approve: true }],
    [{ callId: 'a', approve: true }, { callId: 'a', approve: false }]
  ]) {
    const res = await decide(app, runId, 'b1', bad)
    t.equal(res.status, 409)
    t.equal(res.body.code, 'approval_not_pending')
  }
  const view = await batchOf(app, runId, 'b1')
  t.same(view.body.approvals.map((a: any) => a.callId), ['a', 'b'], 'nothing was decided')
  t.same(view.body.events.map((e: any) => e.type), ['batch.started', 'call.awaiting_approval', 'call.awaiting_approval'])
  const unknownBatch = await decide(app, runId, 'nope', [{ callId: 'a', approve: true }])
  t.equal(unknownBatch.status, 404)
  t.equal(unknownBatch.body.code, 'batch_not_found')
  const empty = await decide(app, runId, 'b1', [])
  t.equal(empty.status, 400)
  t.equal(ex.calls.length, 0)
})

t.test('an approval with edited arguments is prepared again and recorded with the original; an edit that fails preparation makes the call rejected', async (t) => {
  const { app, ex, logs } = await approvalApp(t)
  const runId = await newRun(app)
  await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls })
  const bad = await decide(app, runId, 'b1', [{ callId: 'a', approve: true, arguments: { k: 5 } }])
  t.equal(bad.status, 202)
  t.same(bad.body.results.map((r: any) => [r.callId, r.status, r.details.reason]), [['a', 'rejected', 'invalid_arguments']])
  const done = await decide(app, runId, 'b1', [{ callId: 'b', approve: true, arguments: '{"k":"carol","x":"3"}' }])
  t.equal(done.status, 200)
  t.equal(done.body.results[0].status, 'rejected')
  t.same(done.body.results[0].details.approval, {
    decision: 'approved',
    at: done.body.results[0].details.approval.at,
    by: { tenant: 'default' },
    edited: true,
    arguments: { original: { k: 'ann' }, edited: { k: 5 } }
  }, 'a failed edit is recorded as far as preparation got')
  t.equal(done.body.results[1].status, 'ok')
  t.equal(done.body.results[1].details.approval.edited, true)
  t.strictSame(done.body.results[1].details.approval.arguments, { original: { k: 'bob' }, edited: { k: 'carol', x: 3 } }, 'the original and the edit are recorded')
  t.strictSame((await batchOf(app, runId, 'b1')).body.results[1].details.approval.arguments, { original: { k: 'bob' }, edited: { k: 'carol', x: 3 } }, 'and kept with the batch')
  t.notOk(logs.some((l) => l.includes('carol')), 'never in the logs')
  const sent = ex.calls.find((c) => c.callId === 'b')!
  t.same(sent.arguments, { k: 'carol', x: 3 }, 'the edit, coerced as preparation does')
  t.notOk(ex.calls.some((c) => c.callId === 'a'))
})

t.test('approvals expire after the TTL: pending calls are denied with approval_expired and the batch runs', async (t) => {
  const { app, ex, clock } = await approvalApp(t, { config: { approvalTtlSeconds: 60 } })
  const runId = await newRun(app)
  const held = await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls })
  t.equal(Date.parse(held.body.approvals[0].expiresAt) - Date.parse(held.body.approvals[0].requestedAt), 60_000)
  await decide(app, runId, 'b1', [{ callId: 'a', approve: true }])
  clock.advance(59_999)
  t.equal(await app.services.approvals.sweep(), 0, 'not yet')
  t.equal(ex.calls.length, 0)
  clock.advance(1)
  const late = await decide(app, runId, 'b1', [{ callId: 'b', approve: true }])
  t.equal(late.status, 409, 'a decision after the expiry is refused')
  t.equal(late.body.code, 'approval_not_pending')
  t.equal(await app.services.approvals.sweep(), 1)
  const view = await batchOf(app, runId, 'b1')
  t.equal(view.body.state, 'completed')
  t.same(view.body.results.map((r: any) => [r.callId, r.status, r.details.reason ?? null]), [['a', 'ok', null], ['b', 'denied', 'approval_expired'], ['c', 'ok', null]])
  t.equal(JSON.parse(view.body.results[1].content).reason, 'approval_expired')
  t.equal(view.body.results[1].details.approval.decision, 'expired')
  t.same(ex.calls.map((x) => x.callId).sort(), ['a', 'c'])
  t.equal(await app.services.approvals.sweep(), 0, 'taken up once')
  const metrics = await get(app, '/metrics')
  t.match(metrics.body, /toolgate_approvals_total\{tool="mail",decision="expired"\} 1/)
  t.match(metrics.body, /toolgate_approvals_total\{tool="mail",decision="approved"\} 1/)
  const next = await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b2', calls: [{ id: 'x', name: 'look' }] })
  t.equal(next.status, 200, 'the run is free again')
})

t.test('cancelling the run cancels a waiting batch: every held and waiting call is cancelled', async (t) => {
  const { app, ex } = await approvalApp(t)
  const runId = await newRun(app)
  await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls: [...calls, { id: 'd', name: 'nope' }] })
  await decide(app, runId, 'b1', [{ callId: 'a', approve: true }])
  const cancelled = await post(app, `/v1/runs/${runId}/cancel`, {})
  t.equal(cancelled.body.state, 'cancelled')
  const view = await batchOf(app, runId, 'b1')
  t.equal(view.body.state, 'completed')
  t.same(view.body.results.map((r: any) => r.status), ['cancelled', 'cancelled', 'cancelled', 'rejected'])
  t.equal(view.body.continue, false)
  t.equal(ex.calls.length, 0)
  const inbox = await get(app, '/v1/approvals')
  t.same(inbox.body.approvals, [])
  const late = await decide(app, runId, 'b1', [{ callId: 'b', approve: true }])
  t.equal(late.body.code, 'approval_not_pending')
})

t.test('an approver key decides, its name (never the key) is recorded; other tenants see nothing', async (t) => {
  const keysDoc = {
    keys: [
      { key: 'orchestrator-key-0123456789', tenant: 'acme', roles: ['orchestrator'] },
      { key: 'approver-key-0123456789abc', tenant: 'acme', roles: ['approver'], name: 'dana@ops' },
      { key: 'other-approver-0123456789ab', tenant: 'else', roles: ['approver'], name: 'Eve' }
    ]
  }
  const { app, logs } = await approvalApp(t, { keysDoc })
  const orch = { authorization: 'Bearer orchestrator-key-0123456789' }
  const appr = { authorization: 'Bearer approver-key-0123456789abc' }
  const other = { authorization: 'Bearer other-approver-0123456789ab' }
  const runId = await newRun(app, {}, orch)
  await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls: [{ id: 'p', name: 'pay', arguments: { k: 'rent-secret-value' } }] }, orch)

  t.same((await get(app, '/v1/approvals', other)).body.approvals, [], 'another tenant sees none')
  t.equal((await decide(app, runId, 'b1', [{ callId: 'p', approve: true }], other)).status, 404)
  t.equal((await post(app, '/v1/runs', {}, appr)).status, 403, 'an approver cannot make runs')
  const inbox = await get(app, '/v1/approvals', appr)
  t.same(inbox.body.approvals.map((a: any) => [a.callId, a.arguments]), [['p', { k: 'rent-secret-value' }]])
  const done = await decide(app, runId, 'b1', [{ callId: 'p', approve: true }], appr)
  t.equal(done.status, 200)
  t.same(done.body.results[0].details.approval.by, { tenant: 'acme', name: 'dana@ops' })
  const receipt = done.body.results[0].details.receipt
  t.same(receipt.timeline.map((e: any) => e.event), ['prepared', 'approved', 'dispatched', 'responded'])
  const all = logs.join('')
  t.notMatch(all, /rent-secret-value/, 'arguments never reach the logs')
  t.notMatch(all, /approver-key-0123456789abc/, 'keys never reach the logs')
  t.match(all, /"msg":"approval decided"/)
  const metrics = await get(app, '/metrics')
  t.notMatch(metrics.body, /rent-secret-value/)
})

t.test('a run whose timeoutMs passes while its batch waits cancels the batch: every held call cancelled, gone from the inbox, its stream ended', async (t) => {
  const { app, ex, clock } = await approvalApp(t)
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const runId = await newRun(app, { limits: { timeoutMs: 10_000 } })
  const res = await ssePost(`${base}/v1/runs/${runId}/batches`, { batchId: 'b1', calls })
  for (;;) {
    const { value } = await res.events.next()
    if (value?.type === 'batch.awaiting_approval') break
  }
  await decide(app, runId, 'b1', [{ callId: 'a', approve: true }])
  t.same((await get(app, '/v1/approvals')).body.approvals.map((a: any) => a.callId), ['b'])
  clock.advance(10_000)
  t.same((await get(app, '/v1/approvals')).body.approvals, [], 'out of the inbox as soon as the run timed out')
  t.equal(await app.services.approvals.sweep(), 1, 'the sweep takes it up at once, not at the approvals\' expiry')
  const rest: SseEvent[] = []
  for await (const e of res.events) rest.push(e)
  t.equal(rest.at(-1)!.type, 'batch.completed', 'the stream ended with the answer')
  const view = await batchOf(app, runId, 'b1')
  t.equal(view.body.state, 'completed')
  t.same(view.body.results.map((r: any) => r.status), ['cancelled', 'cancelled', 'cancelled'])
  t.equal(ex.calls.length, 0)
  const run = await get(app, `/v1/runs/${runId}`)
  t.same([run.body.state, run.body.terminationReason], ['terminated', 'timeout'])
  const late = await decide(app, runId, 'b1', [{ callId: 'b', approve: true }])
  t.same([late.status, late.body.code], [409, 'approval_not_pending'])
})

t.test('a timed-out run found by a request settles its waiting batch then and there; a decision after the deadline is refused', async (t) => {
  for (const touch of ['get', 'decide'] as const) {
    const { app, ex, clock } = await approvalApp(t)
    const runId = await newRun(app, { limits: { timeoutMs: 10_000 } })
    await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls })
    clock.advance(10_000)
    if (touch === 'get') {
      t.equal((await get(app, `/v1/runs/${runId}`)).body.terminationReason, 'timeout')
    } else {
      const late = await decide(app, runId, 'b1', [{ callId: 'a', approve: true }, { callId: 'b', approve: true }])
      t.same([late.status, late.body.code], [409, 'approval_not_pending'], 'refused')
    }
    const view = await batchOf(app, runId, 'b1')
    t.equal(view.body.state, 'completed', `${touch}: answered without a sweep`)
    t.same(view.body.results.map((r: any) => r.status), ['cancelled', 'cancelled', 'cancelled'], `${touch}: cancelled, never run`)
    t.equal(ex.calls.length, 0)
    t.equal(await app.services.approvals.sweep(), 0, 'nothing left for the sweep')
  }
})

t.test('a held retry of an unresolved uncertain write says so on its approval entry until that write is resolved', async (t) => {
  const { app, ex } = await approvalApp(t)
  let failFirst = true
  ex.on('mail', (_call, _req, reply) => {
    if (!failFirst) return { content: 'sent' }
    failFirst = false
    return reply.code(502).send({ error: 'gone' })
  })
  const runId = await newRun(app)
  await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls: [{ id: 'm1', name: 'mail', arguments: { k: 'ann' } }] })
  const first = await decide(app, runId, 'b1', [{ callId: 'm1', approve: true }])
  t.equal(first.body.results[0].status, 'uncertain')
  const [open] = (await get(app, `/v1/runs/${runId}/uncertain`)).body.uncertain
  const held = await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b2', calls: [{ id: 'm2', name: 'mail', arguments: { k: 'ann' } }, { id: 'm3', name: 'mail', arguments: { k: 'bob' } }] })
  t.equal(held.status, 202)
  t.strictSame(held.body.approvals.map((a: any) => [a.callId, a.blockedBy ?? null]), [['m2', open.operationId], ['m3', null]], 'the retry says what blocks it; the other call nothing')
  t.strictSame((await get(app, '/v1/approvals')).body.approvals.map((a: any) => [a.callId, a.blockedBy ?? null]), [['m2', open.operationId], ['m3', null]], 'in the inbox too')
  const resolved = await post(app, `/v1/receipts/${open.operationId}/resolve`, { status: 'failed' })
  t.equal(resolved.status, 200)
  t.strictSame((await get(app, '/v1/approvals')).body.approvals.map((a: any) => a.blockedBy ?? null), [null, null], 'resolved: nothing blocks it any more')
  const done = await decide(app, runId, 'b2', [{ callId: 'm2', approve: true }, { callId: 'm3', approve: true }])
  t.strictSame(done.body.results.map((r: any) => r.status), ['ok', 'ok'], 'approved after the resolution, it runs')
})
