/**
 * An MCP `tools/call` cancelled before it started (SPEC section 16: the
 * client's `notifications/cancelled`, or its session's DELETE) is never
 * sent, and is a turn of its run all the same: a batch of the run whose
 * call is `cancelled`, counted in the run's summary and in the metrics, as
 * a call held for approval and then cancelled is. Whatever it waited for
 * (a barrier among the run's calls, a call held for approval, a batch of
 * the batch route holding the run) goes on as before: the calls behind it keep their order, the batch
 * is answered, and the run is free for the batch route once they are done.
 * Its arguments reach no log, metric or event. Through the real `/mcp` with
 * the SDK's client, on the memory store and on Redis.
 */
import t, { type Test } from 'tap'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { FastifyInstance } from 'fastify'
import { randomUUID } from 'node:crypto'
import { type TestExecutor, buildTestApp, get, post, sleep, startExecutor, tool } from '../helper.js'
import { appStoreConfig, redisUnavailable } from '../store/harness.js'
import { boundSession, gateCalls } from './sessions.js'

const AUTH = { authorization: 'Bearer key-acme' }
const KEYS = { keys: [{ key: 'key-acme', tenant: 'acme', roles: ['orchestrator', 'admin'] }] }
const noRedis = await redisUnavailable()

interface Setup { app: FastifyInstance, base: string, ex: TestExecutor, logs: string[] }
interface Listed { batchId: string, state: string, turn?: number, calls?: number, statuses?: Record<string, number> }

async function setup (t: Test, store: 'memory' | 'redis'): Promise<Setup> {
  const ex = await startExecutor(t)
  const config = appStoreConfig(t, store)
  const { app, logs } = await buildTestApp(t, {
    keysDoc: KEYS,
    config,
    tools: [
      tool('look', ex.url, { readOnly: true }),
      tool('scan', ex.url, { readOnly: true }),
      tool('save', ex.url),
      tool('ship', ex.url, { requiresApproval: true })
    ]
  })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app: app as FastifyInstance, base, ex, logs }
}



async function until (cond: () => boolean): Promise<void> {
  while (!cond()) await sleep(5)
}

/** Time for requests sent to reach toolgate and take their place among the run's calls. */
const settle = (): Promise<void> => sleep(150)

async function batchesOf (s: Setup, runId: string): Promise<Listed[]> {
  const res = await get(s.app, `/v1/runs/${runId}/batches`, AUTH)
  return (res.body.batches as Listed[]).filter((b) => b.state === 'completed')
}

/** The run's finished batches once `count` have a call of `status`, or as they stand after `ms` (the old code never got there). */
async function withStatus (s: Setup, runId: string, status: string, count = 1, ms = 3000): Promise<Listed[]> {
  const deadline = Date.now() + ms
  for (;;) {
    const finished = await batchesOf(s, runId)
    if (finished.filter((b) => b.statuses?.[status] !== undefined).length >= count || Date.now() > deadline) return finished
    await sleep(10)
  }
}

/** A counter of /metrics with these labels (0 when it has no such series). */
async function metric (s: Setup, name: string, labels: Record<string, string>): Promise<number> {
  const text = (await get(s.app, '/metrics', AUTH)).body as string
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) || !Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue
    return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return 0
}

/** A call of `look` that waits, cancelled once it reached toolgate: the run's finished batches once it is recorded. */
async function cancelWaitingLook (t: Test, s: Setup, client: Client, runId: string, x: number): Promise<Listed[]> {
  const abort = new AbortController()
  const waiting = client.callTool({ name: 'look', arguments: { x } }, undefined, { signal: abort.signal })
  await settle()
  abort.abort('the user pressed stop')
  await t.rejects(waiting, 'the client stopped waiting')
  return await withStatus(s, runId, 'cancelled')
}

function sentOf (s: Setup, runId: string, name: string): unknown[] {
  return s.ex.calls.filter((c) => c.runId === runId && c.tool === name).map((c) => c.arguments.x)
}

for (const store of ['memory', 'redis'] as const) {
  t.test(store, { skip: store === 'redis' ? noRedis ?? false : false }, async (t) => {
    const s = await setup(t, store)

    t.test('a call cancelled while it waits behind a barrier is never sent, and is a cancelled turn of its run: batches, summary, metrics', async (t) => {
      const { client, runId } = await boundSession(t, s, AUTH)
      const secret = `secret-${randomUUID()}`
      const cancelledBefore = await metric(s, 'toolgate_tool_calls_total', { tool: 'look', status: 'cancelled' })
      const batchesBefore = await metric(s, 'toolgate_batches_total', { outcome: 'cancelled' })
      const gate = gateCalls(s.ex, 'save')
      const write = client.callTool({ name: 'save', arguments: { x: 1 } })
      await until(() => gate.running() === 1)
      const abort = new AbortController()
      const waiting = client.callTool({ name: 'look', arguments: { x: 2, k: secret } }, undefined, { signal: abort.signal })
      const behind = client.callTool({ name: 'look', arguments: { x: 3 } })
      await settle()
      abort.abort('the user pressed stop')
      await t.rejects(waiting, 'the client stopped waiting')
      const meanwhile = await withStatus(s, runId, 'cancelled')
      t.same(meanwhile.map((b) => b.statuses), [{ cancelled: 1 }], 'the cancelled call is a batch of the run while the write still runs')
      gate.release()
      t.equal((await write).isError, false)
      t.equal((await behind)._meta?.['toolgate/status'], 'ok', 'the call behind it runs')
      t.same(sentOf(s, runId, 'look'), [3], 'the cancelled call was never sent')

      const finished = await batchesOf(s, runId)
      t.equal(finished.length, 3, 'each call is a batch of the run, the cancelled one too')
      t.same(finished.map((b) => b.turn).sort(), [1, 2, 3], 'each its own turn')
      const entry = finished.find((b) => b.statuses?.cancelled !== undefined)!
      const batch = await get(s.app, `/v1/runs/${runId}/batches/${entry.batchId}`, AUTH)
      t.equal(batch.status, 200)
      t.equal(batch.body.results.length, 1, 'one result')
      t.match(batch.body.results[0], { name: 'look', status: 'cancelled', isError: true, details: { reason: 'cancelled' } })
      t.same(batch.body.events.map((e: { type: string }) => e.type), ['batch.started', 'batch.completed'], 'the events the stock audience shows')
      t.equal(batch.body.continue, true)
      t.same(batch.body.run, { state: 'active' })
      t.notOk(JSON.stringify(batch.body).includes(secret), 'no arguments in its answer')

      const summary = await get(s.app, `/v1/runs/${runId}/summary`, AUTH)
      t.equal(summary.body.turns, 3)
      t.equal(summary.body.calls, 3)
      t.same(summary.body.callsByStatus, { ok: 2, cancelled: 1 })
      t.equal(await metric(s, 'toolgate_tool_calls_total', { tool: 'look', status: 'cancelled' }), cancelledBefore + 1, 'counted by tool and status')
      t.equal(await metric(s, 'toolgate_batches_total', { outcome: 'cancelled' }), batchesBefore + 1)
      const metrics = (await get(s.app, '/metrics', AUTH)).body as string
      t.notOk(metrics.includes(secret), 'no arguments in the metrics')
      t.notOk(s.logs.join('').includes(secret), 'no arguments in the logs')

      const free = await post(s.app, `/v1/runs/${runId}/batches`, { batchId: 'b-after', calls: [{ id: 'c1', name: 'scan', arguments: { x: 4 } }] }, AUTH)
      t.equal(free.status, 200, 'the run is free for the batch route once its calls are answered')
    })

    t.test('a call cancelled once it has started settles on its own, and its turn counts as completed, not cancelled', async (t) => {
      const { client, runId } = await boundSession(t, s, AUTH)
      const completedBefore = await metric(s, 'toolgate_batches_total', { outcome: 'completed' })
      const cancelledBefore = await metric(s, 'toolgate_batches_total', { outcome: 'cancelled' })
      const gate = gateCalls(s.ex, 'scan')
      const abort = new AbortController()
      const running = client.callTool({ name: 'scan', arguments: { x: 1 } }, undefined, { signal: abort.signal })
      await until(() => gate.running() === 1)
      abort.abort('the user pressed stop')
      await t.rejects(running, 'the client stopped waiting')
      await settle()
      gate.release()
      const finished = await withStatus(s, runId, 'ok')
      t.same(finished.map((b) => b.statuses), [{ ok: 1 }], 'the call ran to its end')
      t.equal(await metric(s, 'toolgate_batches_total', { outcome: 'completed' }), completedBefore + 1)
      t.equal(await metric(s, 'toolgate_batches_total', { outcome: 'cancelled' }), cancelledBefore, 'no batch counted cancelled')
    })

    t.test('a call cancelled while a batch of the batch route holds the run is recorded cancelled; the batch is answered as ever', async (t) => {
      const { client, runId } = await boundSession(t, s, AUTH)
      const gate = gateCalls(s.ex, 'scan')
      const batch = post(s.app, `/v1/runs/${runId}/batches`, { batchId: 'b-holds', calls: [{ id: 'c1', name: 'scan', arguments: { x: 1 } }] }, AUTH)
      await until(() => gate.running() === 1)
      const meanwhile = await cancelWaitingLook(t, s, client, runId, 2)
      t.same(meanwhile.map((b) => b.statuses), [{ cancelled: 1 }], 'recorded while the batch still holds the run')
      const busy = await post(s.app, `/v1/runs/${runId}/batches`, { batchId: 'b-busy', calls: [{ id: 'c1', name: 'look', arguments: { x: 3 } }] }, AUTH)
      t.equal(busy.body.code, 'run_busy', 'the batch still holds the run')
      gate.release()
      const answered = await batch
      t.equal(answered.status, 200)
      t.equal(answered.body.results[0].status, 'ok')
      t.same(sentOf(s, runId, 'look'), [], 'the cancelled call was never sent')
      const summary = await get(s.app, `/v1/runs/${runId}/summary`, AUTH)
      t.same(summary.body.callsByStatus, { ok: 1, cancelled: 1 })
      t.equal(summary.body.turns, 2)
      const call = await client.callTool({ name: 'look', arguments: { x: 4 } })
      t.equal(call._meta?.['toolgate/status'], 'ok', 'the run takes calls as before')
      const free = await post(s.app, `/v1/runs/${runId}/batches`, { batchId: 'b-after', calls: [{ id: 'c1', name: 'look', arguments: { x: 5 } }] }, AUTH)
      t.equal(free.status, 200)
    })

    t.test('a call cancelled while it waits behind a call held for approval is recorded cancelled; the held call is decided and runs as ever', async (t) => {
      const { client, runId } = await boundSession(t, s, AUTH)
      const ship = client.callTool({ name: 'ship', arguments: { x: 1 } })
      let pending: Array<{ runId: string, batchId: string, callId: string }> = []
      while (pending.length === 0) {
        pending = ((await get(s.app, '/v1/approvals', AUTH)).body.approvals as typeof pending).filter((a) => a.runId === runId)
        await sleep(10)
      }
      const meanwhile = await cancelWaitingLook(t, s, client, runId, 2)
      t.same(meanwhile.map((b) => b.statuses), [{ cancelled: 1 }], 'recorded while the held call waits for its decision')
      const held = pending[0]!
      const decided = await post(s.app, `/v1/runs/${runId}/batches/${held.batchId}/approvals`, { decisions: [{ callId: held.callId, approve: true }] }, AUTH)
      t.equal(decided.status, 200)
      t.equal((await ship)._meta?.['toolgate/status'], 'ok', 'the held call runs once approved')
      t.same(s.ex.calls.filter((c) => c.runId === runId).map((c) => c.tool), ['ship'], 'the cancelled call was never sent')
      const summary = await get(s.app, `/v1/runs/${runId}/summary`, AUTH)
      t.same(summary.body.callsByStatus, { ok: 1, cancelled: 1 })
      t.match(summary.body.approvals, { approved: 1, denied: 0, expired: 0 })
    })

    t.test("the session's DELETE cancels its calls that have not started: each is recorded cancelled; the started one settles on its own", async (t) => {
      const { client, transport, runId } = await boundSession(t, s, AUTH)
      const gate = gateCalls(s.ex, 'save')
      const write = client.callTool({ name: 'save', arguments: { x: 1 } })
      await until(() => gate.running() === 1)
      const waiting = [client.callTool({ name: 'look', arguments: { x: 2 } }), client.callTool({ name: 'look', arguments: { x: 3 } })]
      for (const w of [write, ...waiting]) w.catch(() => {})
      await settle()
      await transport.terminateSession()
      const meanwhile = await withStatus(s, runId, 'cancelled', 2)
      t.same(meanwhile.map((b) => b.statuses), [{ cancelled: 1 }, { cancelled: 1 }], 'both waiting calls are recorded cancelled')
      gate.release()
      const finished = await withStatus(s, runId, 'ok')
      t.equal(finished.length, 3)
      t.same(sentOf(s, runId, 'look'), [], 'no waiting call was sent')
      t.same(sentOf(s, runId, 'save'), [1], 'the started call was sent once')
      const summary = await get(s.app, `/v1/runs/${runId}/summary`, AUTH)
      t.same(summary.body.callsByStatus, { ok: 1, cancelled: 2 })
      t.equal((await get(s.app, `/v1/runs/${runId}`, AUTH)).body.state, 'active', 'the run it was bound to is left as it is')
    })
  })
}
