/**
 * A batch held before an upgrade: its run's waiting batch is in the form an
 * earlier version stored (the batch's fields beside waiting's own, the
 * approvals on each outcome). It is read in the current form, answered as it
 * was, decided and taken up, in the memory store and in Redis.
 */
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { REDIS_URL, deleteByPrefix, redisUnavailable } from '../store/harness.js'
import { decide, newRun } from './helpers.js'

const noRedis = await redisUnavailable()
const calls = [
  { id: 'c1', name: 'look', arguments: { x: 1 } },
  { id: 'c2', name: 'mail', arguments: { k: 'bob', x: 7 } },
  { id: 'c3', name: 'nope', arguments: {} }
]

for (const kind of ['memory', 'redis'] as const) {
  t.test(`a batch held by an earlier version is answered as it was, then decided and run (${kind} store)`, { skip: kind === 'redis' ? noRedis ?? false : false }, async (t) => {
    const prefix = `toolgate-test:${randomUUID()}:`
    if (kind === 'redis') t.teardown(() => deleteByPrefix(prefix))
    const ex = await startExecutor(t)
    const { app } = await buildTestApp(t, {
      tools: [tool('look', ex.url, { readOnly: true }), tool('mail', ex.url, { requiresApproval: true, conflictKey: 'to:{/k}' })],
      approvalSweepMs: 0,
      ...(kind === 'redis' ? { config: { store: `${REDIS_URL}?prefix=${encodeURIComponent(prefix)}` } } : {})
    })
    const runId = await newRun(app)
    const url = `/v1/runs/${runId}/batches`
    const held = await app.inject({ method: 'POST', url, payload: { batchId: 'b1', calls } })
    t.equal(held.statusCode, 202)

    const { store } = app.services
    const current = (await store.getRun(runId))!.waiting!
    const rejected = current.state.outcomes[2]!
    await store.updateRun(runId, (run) => {
      // As the earlier version wrote it.
      (run as { waiting: unknown }).waiting = {
        batchId: 'b1',
        requestHash: current.requestHash,
        turn: 1,
        phase: 'awaiting',
        scopes: current.state.scopes,
        requestedAt: current.requestedAt,
        expiresAt: current.expiresAt,
        calls: [{ id: 'c1', name: 'look' }, { id: 'c2', name: 'mail' }, { id: 'c3', name: 'nope' }],
        outcomes: [
          { ok: true, tool: 'look', arguments: { x: 1 }, held: false, conflictKey: null },
          { ok: true, tool: 'mail', arguments: { k: 'bob', x: 7 }, held: true, conflictKey: 'to:bob' },
          { ok: false, tool: null, reason: 'unknown_tool', message: rejected.ok ? '' : rejected.message, arguments: {} }
        ],
        events: current.state.approvals.events
      }
    })

    const resent = await app.inject({ method: 'POST', url, payload: { batchId: 'b1', calls } })
    t.equal(resent.statusCode, 202)
    t.equal(resent.payload, held.payload, 'a resend answers the 202, byte for byte')
    const view = await app.inject({ method: 'GET', url: `${url}/b1` })
    t.equal(view.payload, held.payload, 'and so does the batch resource')
    const inbox = await get(app, '/v1/approvals')
    t.same(inbox.body.approvals.map((a: { callId: string, arguments: unknown }) => [a.callId, a.arguments]), [['c2', { k: 'bob', x: 7 }]])

    const done = await decide(app, runId, 'b1', [{ callId: 'c2', approve: true }])
    t.equal(done.status, 200)
    t.equal(done.body.state, 'completed')
    t.same(done.body.results.map((r: { callId: string, status: string }) => [r.callId, r.status]), [['c1', 'ok'], ['c2', 'ok'], ['c3', 'rejected']])
    t.equal(done.body.results[1].details.approval.decision, 'approved')
    t.same(done.body.events.map((e: { type: string }) => e.type), ['batch.started', 'call.awaiting_approval', 'call.approved', 'batch.completed'])
    t.same(ex.calls.map((c) => [c.callId, c.arguments]).sort(), [['c1', { x: 1 }], ['c2', { k: 'bob', x: 7 }]], 'the calls ran, with their held arguments')
    t.equal((await store.getRun(runId))!.waiting ?? null, null, 'the waiting batch left the record')
    const replay = await post(app, url, { batchId: 'b1', calls })
    t.same(replay.body, done.body, 'a resend now replays the answer')
  })
}
