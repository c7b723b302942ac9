/**
 * Per-tenant quotas (SPEC section 19) through the API: runs per tenant,
 * batches waiting for approvals per tenant and the size of `metadata`;
 * over a quota is 429 quota_exceeded for that tenant alone.
 */
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { approvalApp, newRun } from '../approvals/helpers.js'
import { REDIS_URL, deleteByPrefix, redisUnavailable } from '../store/harness.js'

const keysDoc = {
  keys: [
    { key: 'acme-orchestrator-0123456789', tenant: 'acme', roles: ['orchestrator'] },
    { key: 'beta-orchestrator-0123456789', tenant: 'beta', roles: ['orchestrator'] }
  ]
}
// Asked before any test runs: the approval apps' fake clocks are not to meet the Redis client.
const noRedis = await redisUnavailable()
const acme = { authorization: 'Bearer acme-orchestrator-0123456789' }
const beta = { authorization: 'Bearer beta-orchestrator-0123456789' }

t.test('a tenant at TOOLGATE_MAX_RUNS_PER_TENANT is answered 429 quota_exceeded; another tenant creates runs as before', async (t) => {
  const { app } = await approvalApp(t, { keysDoc, config: { maxRunsPerTenant: 2 } })
  await newRun(app, { runId: 'a1' }, acme)
  await newRun(app, { runId: 'a2' }, acme)
  const over = await post(app, '/v1/runs', { runId: 'a3' }, acme)
  t.equal(over.status, 429)
  t.equal(over.body.code, 'quota_exceeded')
  t.match(over.body.detail, /TOOLGATE_MAX_RUNS_PER_TENANT/)
  t.equal((await get(app, '/v1/runs/a3', acme)).status, 404, 'nothing was created')
  t.equal((await post(app, '/v1/runs', { runId: 'b1' }, beta)).status, 201)
  t.match(over.body.detail, /none of them has ended: end one/, 'the answer says how to make room')
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/runs/a1', headers: acme })).statusCode, 200)
  const afterEnd = await post(app, '/v1/runs', { runId: 'a3' }, acme)
  t.equal(afterEnd.status, 201, "the tenant's ended run makes room")
  t.equal((await get(app, '/v1/runs/a1', acme)).status, 404, 'by leaving the store')
  t.equal((await get(app, '/v1/runs/a2', acme)).body.state, 'active', 'its active run stays')
  t.equal((await post(app, '/v1/runs', { runId: 'a4' }, acme)).status, 429, 'with no ended run left, the quota holds')
})

t.test('metadata over 16 KiB is 429 quota_exceeded; 16 KiB is fine', async (t) => {
  const { app } = await approvalApp(t, { keysDoc })
  const metadata = (bytes: number): Record<string, string> => {
    const out: Record<string, string> = {}
    for (let i = 0; bytes > 0; i++) {
      const key = `k${String(i).padStart(3, '0')}`
      const value = 'x'.repeat(Math.max(0, Math.min(4000, bytes - key.length - 6)))
      out[key] = value
      bytes -= key.length + value.length + 6
    }
    return out
  }
  const small = metadata(16 * 1024 - 200)
  t.equal((await post(app, '/v1/runs', { runId: 'ok', metadata: small }, acme)).status, 201)
  const big = metadata(20 * 1024)
  const over = await post(app, '/v1/runs', { runId: 'big', metadata: big }, acme)
  t.equal(over.status, 429)
  t.equal(over.body.code, 'quota_exceeded')
  t.match(over.body.detail, /metadata is \d+ bytes as JSON, over the quota of 16384/)
  t.notMatch(JSON.stringify(over.body), /xxxx/, 'the metadata is not echoed')
})

t.test('a tenant at its quota of waiting batches is refused another; its other batches and the other tenant go on', async (t) => {
  const { app, ex } = await approvalApp(t, { keysDoc, config: { maxWaitingBatchesPerTenant: 2 } })
  for (const runId of ['a1', 'a2', 'a3']) await newRun(app, { runId }, acme)
  for (const runId of ['a1', 'a2']) {
    const held = await post(app, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls: [{ id: 'm', name: 'mail', arguments: { k: 'x' } }] }, acme)
    t.equal(held.status, 202, `${runId} waits for approval`)
  }
  const over = await post(app, '/v1/runs/a3/batches', { batchId: 'b1', calls: [{ id: 'm', name: 'mail', arguments: { k: 'secret-arg' } }, { id: 'l', name: 'look' }] }, acme)
  t.equal(over.status, 429)
  t.equal(over.body.code, 'quota_exceeded')
  t.match(over.body.detail, /TOOLGATE_MAX_WAITING_BATCHES_PER_TENANT/)
  t.notMatch(JSON.stringify(over.body), /secret-arg/)
  t.equal(ex.calls.length, 0, 'nothing of the refused batch ran')
  t.equal((await get(app, '/v1/runs/a3', acme)).body.inFlight ?? null, null)

  const read = await post(app, '/v1/runs/a3/batches', { batchId: 'b2', calls: [{ id: 'l', name: 'look' }] }, acme)
  t.equal(read.status, 200, 'a batch with nothing to approve runs on the same run')
  t.equal(read.body.results[0].status, 'ok')

  await newRun(app, { runId: 'z1' }, beta)
  const theirs = await post(app, '/v1/runs/z1/batches', { batchId: 'b1', calls: [{ id: 'm', name: 'mail', arguments: { k: 'y' } }] }, beta)
  t.equal(theirs.status, 202, "the other tenant's batch waits as before")
})

t.test('two replicas on one Redis, racing to hold batches of one tenant: the waiting-batch quota holds exactly', { skip: noRedis ?? false }, async (t) => {
  const prefix = `toolgate-test:${randomUUID()}:`
  t.teardown(() => deleteByPrefix(prefix))
  const ex = await startExecutor(t)
  const config = { store: `${REDIS_URL}?prefix=${encodeURIComponent(prefix)}`, maxWaitingBatchesPerTenant: 3 }
  const replicas = await Promise.all([0, 1].map(async () => (await buildTestApp(t, { tools: [tool('mail', ex.url, { requiresApproval: true })], config, keysDoc })).app))
  const runs = Array.from({ length: 10 }, (_, i) => `race${i}`)
  for (const runId of runs) await newRun(replicas[0]!, { runId }, acme)
  const answers = await Promise.all(runs.map((runId, i) =>
    post(replicas[i % 2]!, `/v1/runs/${runId}/batches`, { batchId: 'b1', calls: [{ id: 'm', name: 'mail', arguments: { k: runId } }] }, acme)))
  t.same(answers.map((a) => a.status).sort(), [202, 202, 202, 429, 429, 429, 429, 429, 429, 429], 'three held, the others refused')
  t.ok(answers.filter((a) => a.status === 429).every((a) => a.body.code === 'quota_exceeded'))
  const held = await get(replicas[1]!, '/v1/approvals', acme)
  t.equal(held.status, 200)
  t.equal(new Set(held.body.approvals.map((a: { runId: string }) => a.runId)).size, 3, 'three runs wait, seen from either replica')
  await newRun(replicas[1]!, { runId: 'theirs' }, beta)
  t.equal((await post(replicas[0]!, '/v1/runs/theirs/batches', { batchId: 'b1', calls: [{ id: 'm', name: 'mail', arguments: { k: 'y' } }] }, beta)).status, 202, "the other tenant's batch waits as before")
})
