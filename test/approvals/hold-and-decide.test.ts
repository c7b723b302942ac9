import t from 'tap'
import { get, post } from '../helper.js'
import { approvalApp, batchOf, decide, newRun } from './helpers.js'

t.test('a batch with a call that requires approval runs nothing and answers 202 with the held call and the rejections', async (t) => {
  const { app, ex } = await approvalApp(t)
  const runId = await newRun(app)
  const res = await post(app, `/v1/runs/${runId}/batches`, {
    batchId: 'b1',
    calls: [
      { id: 'c1', name: 'look', arguments: { x: 1 } },
      { id: 'c2', name: 'mail', arguments: '{"k":"bob","x":"7"}' },
      { id: 'c3', name: 'nope', arguments: {} }
    ]
  })
  t.equal(res.status, 202)
  t.equal(res.body.state, 'awaiting_approval')
  t.same(res.body.results.map((r: any) => [r.callId, r.status, r.details.reason]), [['c3', 'rejected', 'unknown_tool']])
  t.equal(res.body.approvals.length, 1)
  t.same(res.body.approvals[0].callId, 'c2')
  t.same(res.body.approvals[0].tool, 'mail')
  t.same(res.body.approvals[0].arguments, { k: 'bob', x: 7 }, 'the prepared arguments (coerced)')
  t.ok(Date.parse(res.body.approvals[0].expiresAt) - Date.parse(res.body.approvals[0].requestedAt) === 3600_000)
  t.same(res.body.events.map((e: any) => e.type), ['batch.started', 'call.awaiting_approval'])
  t.equal(res.body.continue, true)
  t.equal(ex.calls.length, 0, 'nothing dispatched, not even the read')

  const busy = await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b2', calls: [{ id: 'x', name: 'look' }] })
  t.equal(busy.status, 409)
  t.equal(busy.body.code, 'run_busy')

  const again = await post(app, `/v1/runs/${runId}/batches`, {
    batchId: 'b1',
    calls: [
      { id: 'c1', name: 'look', arguments: { x: 1 } },
      { id: 'c2', name: 'mail', arguments: '{"k":"bob","x":"7"}' },
      { id: 'c3', name: 'nope', arguments: {} }
    ]
  })
  t.equal(again.status, 202, 'a resend answers the current state')
  t.same(again.body.approvals, res.body.approvals)

  const inbox = await get(app, '/v1/approvals')
  t.equal(inbox.status, 200)
  t.same(inbox.body.approvals.map((a: any) => [a.runId, a.batchId, a.callId]), [[runId, 'b1', 'c2']])

  const view = await batchOf(app, runId, 'b1')
  t.equal(view.status, 200)
  t.equal(view.body.state, 'awaiting_approval')

  const done = await decide(app, runId, 'b1', [{ callId: 'c2', approve: true }])
  t.equal(done.status, 200)
  t.equal(done.body.state, 'completed')
  t.same(done.body.results.map((r: any) => [r.callId, r.status]), [['c1', 'ok'], ['c2', 'ok'], ['c3', 'rejected']])
  t.equal(done.body.results[1].details.approval.decision, 'approved')
  t.same(done.body.events.map((e: any) => e.type), ['batch.started', 'call.awaiting_approval', 'call.approved', 'batch.completed'])
  t.same(done.body.events.map((e: any) => e.seq), [1, 2, 3, 4])
  t.same(ex.calls.map((c) => c.callId).sort(), ['c1', 'c2'])
  t.same(ex.calls.find((c) => c.callId === 'c2')!.arguments, { k: 'bob', x: 7 })

  const replay = await post(app, `/v1/runs/${runId}/batches`, {
    batchId: 'b1',
    calls: [
      { id: 'c1', name: 'look', arguments: { x: 1 } },
      { id: 'c2', name: 'mail', arguments: '{"k":"bob","x":"7"}' },
      { id: 'c3', name: 'nope', arguments: {} }
    ]
  })
  t.equal(replay.status, 200)
  t.same(replay.body, done.body, 'after completion a resend replays')
  const stored = await batchOf(app, runId, 'b1')
  t.same(stored.body, done.body)
  const twice = await decide(app, runId, 'b1', [{ callId: 'c2', approve: true }])
  t.equal(twice.status, 409)
  t.equal(twice.body.code, 'approval_not_pending')
  t.equal(ex.calls.length, 2)
})
