/**
 * Durable waiting (SPEC section 13): with the Redis store a batch held for
 * approvals lives in the store, not in the replica that took it. Two (and a
 * third) real processes; skipped, saying why, when no Redis answers.
 */
import { randomUUID } from 'node:crypto'
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { sleep, startExecutor, tool } from '../helper.js'
import { REDIS_URL, deleteByPrefix, redisUnavailable } from '../store/harness.js'
import { buildToolgate, call, startReplica } from '../replicas/processes.js'
import { type SseEvent, ssePost } from '../schedule/harness.js'

const noRedis = await redisUnavailable()
if (noRedis !== undefined) {
  t.plan(0, `approval replica tests skipped: ${noRedis}`)
} else {
  await replicas()
}

async function replicas (): Promise<void> {
  const prefix = `toolgate-test:${randomUUID()}:`
  t.teardown(() => deleteByPrefix(prefix))
  const ex = await startExecutor(t)
  ex.on('pay', () => ({ status: 'committed', result: { paid: true } }))
  const toolsFile = join(tmpdir(), `toolgate-approval-tools-${randomUUID()}.json`)
  writeFileSync(toolsFile, JSON.stringify({
    tools: [tool('look', ex.url, { readOnly: true }), tool('mail', ex.url, { requiresApproval: true }), tool('pay', ex.url, { requiresApproval: true, action: {} })]
  }))
  t.teardown(() => rmSync(toolsFile, { force: true }))
  const server = buildToolgate()
  const env = { TOOLGATE_STORE: `${REDIS_URL}?prefix=${encodeURIComponent(prefix)}`, TOOLGATE_TOOLS_FILE: toolsFile, TOOLGATE_LEASE_MS: '2000' }
  const [a, b] = await Promise.all([startReplica(t, server, 'A', env), startReplica(t, server, 'B', env)])
  const sent = (runId: string): string[] => ex.calls.filter((c) => c.runId === runId).map((c) => c.callId).sort()

  t.test('a batch held on a replica that is then killed is decided on another, which runs it', async (t) => {
    const doomed = await startReplica(t, server, 'doomed', env)
    t.equal((await call(doomed, 'POST', '/v1/runs', { runId: 'killed' })).status, 201)
    const calls = [{ id: 'r', name: 'look', arguments: { x: 1 } }, { id: 'p', name: 'pay', arguments: { k: 'rent' } }, { id: 'm', name: 'mail', arguments: { k: 'bob' } }]
    const held = await call(doomed, 'POST', '/v1/runs/killed/batches', { batchId: 'b1', calls })
    t.equal(held.status, 202)
    await doomed.kill()

    const inbox = await call(b, 'GET', '/v1/approvals')
    t.same(inbox.body.approvals.filter((x: any) => x.runId === 'killed').map((x: any) => x.callId), ['p', 'm'])
    t.equal((await call(a, 'POST', '/v1/runs/killed/batches', { batchId: 'b2', calls: [] })).body.code, 'run_busy', 'the run is busy on every replica')
    const resent = await call(a, 'POST', '/v1/runs/killed/batches', { batchId: 'b1', calls })
    t.equal(resent.status, 202, 'a resend to another replica answers where the batch stands')
    const partial = await call(a, 'POST', '/v1/runs/killed/batches/b1/approvals', { decisions: [{ callId: 'm', approve: false, reason: 'no mail today' }] })
    t.equal(partial.status, 202)
    t.same(sent('killed'), [], 'nothing dispatched before the last decision')
    const done = await call(b, 'POST', '/v1/runs/killed/batches/b1/approvals', { decisions: [{ callId: 'p', approve: true }] })
    t.equal(done.status, 200)
    t.same(done.body.results.map((r: any) => r.status), ['ok', 'ok', 'denied'])
    t.same(done.body.results[1].details.receipt.timeline.map((e: any) => e.event), ['prepared', 'approved', 'dispatched', 'responded'])
    t.same(sent('killed'), ['p', 'r'])
    const view = await call(a, 'GET', '/v1/runs/killed/batches/b1')
    t.same(view.body, done.body, 'every replica reads the stored answer')
    t.equal((await call(a, 'POST', '/v1/runs/killed/batches/b1/approvals', { decisions: [{ callId: 'p', approve: true }] })).body.code, 'approval_not_pending')
    t.same(sent('killed'), ['p', 'r'])
  })

  t.test('a stream held on one replica ends when the batch completes on the other', async (t) => {
    t.equal((await call(a, 'POST', '/v1/runs', { runId: 'streamed' })).status, 201)
    const res = await ssePost(`${a.url}/v1/runs/streamed/batches`, { batchId: 'b1', calls: [{ id: 'm', name: 'mail', arguments: { k: 'ann' } }] })
    const seen: SseEvent[] = []
    for (;;) {
      const { value } = await res.events.next()
      seen.push(value!)
      if (value?.type === 'batch.awaiting_approval') break
    }
    const done = await call(b, 'POST', '/v1/runs/streamed/batches/b1/approvals', { decisions: [{ callId: 'm', approve: true }] })
    t.equal(done.status, 200)
    for await (const e of res.events) seen.push(e)
    t.equal(seen.at(-1)!.type, 'batch.completed')
    t.same(seen.at(-1)!.data, done.body)
    t.ok(seen.some((e) => e.type === 'call.approved'), 'the decision made on the other replica reached the stream')
  })

  t.test('approvals expire on every replica, without a request touching the run', async (t) => {
    const quick = await startReplica(t, server, 'quick', { ...env, TOOLGATE_APPROVAL_TTL_SECONDS: '1' })
    t.equal((await call(quick, 'POST', '/v1/runs', { runId: 'expiring' })).status, 201)
    const held = await call(quick, 'POST', '/v1/runs/expiring/batches', { batchId: 'b1', calls: [{ id: 'r', name: 'look' }, { id: 'm', name: 'mail', arguments: { k: 'x' } }] })
    t.equal(held.status, 202)
    await quick.kill()
    // A and B sweep once a second; nothing else touches the run.
    let view = await call(b, 'GET', '/v1/runs/expiring/batches/b1')
    for (let i = 0; i < 200 && view.body.state !== 'completed'; i++) {
      await sleep(50)
      view = await call(b, 'GET', '/v1/runs/expiring/batches/b1')
    }
    t.equal(view.body.state, 'completed')
    t.same(view.body.results.map((r: any) => [r.status, r.details.reason ?? null]), [['ok', null], ['denied', 'approval_expired']])
    t.same(sent('expiring'), ['r'])
  })
}
