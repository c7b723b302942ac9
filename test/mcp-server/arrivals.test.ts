/**
 * A run's MCP calls arrive concurrently and are scheduled together, by
 * arrival, through the real `/mcp` with the SDK's client: calls eligible to
 * overlap run side by side up to the run's `maxConcurrentTools`, a barrier
 * runs alone, calls of one conflict key never overlap, an uncertain write
 * blocks the writes waiting behind it, a batch on the batch route meanwhile
 * is 409 `run_busy` and an MCP call waits for a batch that holds the run;
 * each call is a batch of its own in the run's list. On the memory store
 * and on Redis (the calls of a run share one lease of the run).
 */
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { type TestExecutor, buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { appStoreConfig, redisUnavailable } from '../store/harness.js'
import { boundSession, gateCalls } from './sessions.js'

const AUTH = { authorization: 'Bearer key-acme' }
const KEYS = { keys: [{ key: 'key-acme', tenant: 'acme', roles: ['orchestrator', 'admin'] }] }
const noRedis = await redisUnavailable()

interface Setup { app: FastifyInstance, base: string, ex: TestExecutor }

async function setup (t: Test, store: 'memory' | 'redis'): Promise<Setup> {
  const ex = await startExecutor(t)
  const config = appStoreConfig(t, store)
  const { app } = await buildTestApp(t, {
    keysDoc: KEYS,
    config,
    tools: [
      tool('look', ex.url, { readOnly: true }),
      tool('paint', ex.url, { conflictKey: 'tile:{/x}', execution: 'parallel' }),
      tool('save', ex.url)
    ]
  })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app: app as FastifyInstance, base, ex }
}



/** Resolves once `cond` holds (the test's own timeout bounds it). */
async function until (cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((resolve) => setTimeout(resolve, 5))
}

/** Time for requests sent to reach toolgate: the tests' assertions do not depend on it, only how much they prove. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 150))

function overlapping (ex: TestExecutor, name: string, x: number): number {
  const calls = ex.calls.filter((c) => c.tool === name && c.arguments.x === x)
  let pairs = 0
  for (let i = 0; i < calls.length; i++) {
    for (let j = i + 1; j < calls.length; j++) {
      const [a, b] = [calls[i]!, calls[j]!]
      if (a.startedAt < (b.endedAt ?? Infinity) && b.startedAt < (a.endedAt ?? Infinity)) pairs++
    }
  }
  return pairs
}

for (const store of ['memory', 'redis'] as const) {
  t.test(store, { skip: store === 'redis' ? noRedis ?? false : false }, async (t) => {
    const s = await setup(t, store)

    t.test('reads sent at once run side by side, up to the run maxConcurrentTools', async (t) => {
      const { client } = await boundSession(t, s, AUTH, { maxConcurrentTools: 2 })
      const gate = gateCalls(s.ex, 'look')
      const calls = [1, 2, 3].map((x) => client.callTool({ name: 'look', arguments: { x } }))
      await until(() => gate.running() === 2)
      await settle()
      t.equal(gate.running(), 2, 'two run together; the third waits for a slot')
      gate.release()
      const results = await Promise.all(calls)
      t.same(results.map((r) => r.isError), [false, false, false])
      t.equal(s.ex.calls.filter((c) => c.tool === 'look').length, 3)
    })

    t.test('writes of one conflict key never overlap and keep their order; another key runs beside them', async (t) => {
      const { client } = await boundSession(t, s, AUTH)
      const before = s.ex.calls.length
      const gate = gateCalls(s.ex, 'paint')
      const calls = [1, 1, 2].map((x) => client.callTool({ name: 'paint', arguments: { x } }))
      await until(() => gate.running() === 2)
      await settle()
      t.equal(gate.running(), 2, 'tile 1 and tile 2 run together, the second write to tile 1 waits')
      gate.release()
      const results = await Promise.all(calls)
      t.same(results.map((r) => r.isError), [false, false, false])
      t.equal(overlapping(s.ex, 'paint', 1), 0, 'no two writes to tile 1 overlapped at the executor')
      const tile1 = s.ex.calls.slice(before).filter((c) => c.arguments.x === 1)
      t.equal(tile1[0]!.callId, results[0]!._meta?.['toolgate/callId'], 'in arrival order')
    })

    t.test('a barrier waits for the earlier calls and runs alone; a call after it waits for it', async (t) => {
      const { client } = await boundSession(t, s, AUTH)
      const before = s.ex.calls.length
      const gate = gateCalls(s.ex, 'look')
      const read = client.callTool({ name: 'look', arguments: { x: 1 } })
      await until(() => gate.running() === 1)
      const write = client.callTool({ name: 'save', arguments: { x: 2 } })
      await settle()
      const later = client.callTool({ name: 'look', arguments: { x: 3 } })
      await settle()
      t.equal(gate.running(), 1, 'the read after the waiting write has not started')
      t.equal(s.ex.calls.slice(before).filter((c) => c.tool === 'save').length, 0, 'the write waits for the read')
      gate.release()
      await Promise.all([read, write, later])
      const [r1, w, r3] = ['look', 'save', 'look'].map((name, i) => s.ex.calls.slice(before).filter((c) => c.tool === name)[i === 2 ? 1 : 0]!)
      t.ok(w!.startedAt >= r1!.endedAt!, 'the write started after the read ended')
      t.ok(r3!.startedAt >= w!.endedAt!, 'the later read started after the write ended')
    })

    t.test('a write that becomes uncertain blocks the writes of its key waiting behind it; other keys and reads go on', async (t) => {
      const { client, runId } = await boundSession(t, s, AUTH)
      let open!: () => void
      const gate = new Promise<void>((resolve) => { open = resolve })
      s.ex.on('paint', async (call, _req, reply) => {
        await gate
        return call.arguments.x === 1 && call.arguments.y === 1 ? reply.code(503).send({ error: 'down' }) : { content: 'painted' }
      })
      const lost = client.callTool({ name: 'paint', arguments: { x: 1, y: 1 } })
      await until(() => s.ex.calls.some((c) => c.runId === runId && c.tool === 'paint'))
      const behind = client.callTool({ name: 'paint', arguments: { x: 1, y: 2 } })
      const other = client.callTool({ name: 'paint', arguments: { x: 2, y: 2 } })
      await settle()
      open()
      const [a, b, c] = await Promise.all([lost, behind, other])
      t.equal(a._meta?.['toolgate/status'], 'uncertain')
      t.equal(b._meta?.['toolgate/status'], 'blocked', 'the write to tile 1 waiting behind it is blocked')
      t.equal(b.isError, true)
      t.match((b.content as Array<{ text: string }>)[0]!.text, new RegExp(String(a._meta?.['toolgate/callId'])))
      t.equal(c._meta?.['toolgate/status'], 'ok', 'tile 2 is not')
      t.equal(s.ex.calls.filter((x) => x.runId === runId && x.arguments.y === 2 && x.arguments.x === 1).length, 0, 'the blocked write was never sent')
      const batches = await get(s.app, `/v1/runs/${runId}/batches`, AUTH)
      t.equal(batches.status, 200)
      const listed = (batches.body.batches ?? batches.body.items ?? batches.body) as unknown[]
      t.equal(listed.length, 3, 'each call is a batch of the run')
    })

    t.test('a batch on the batch route while MCP calls run is 409 run_busy; an MCP call waits for a batch that holds the run', async (t) => {
      const { client, runId } = await boundSession(t, s, AUTH)
      const gate = gateCalls(s.ex, 'look')
      const call = client.callTool({ name: 'look', arguments: { x: 1 } })
      await until(() => gate.running() === 1)
      const busy = await post(s.app, `/v1/runs/${runId}/batches`, { batchId: 'b-busy', calls: [{ id: 'c1', name: 'look', arguments: { x: 2 } }] }, AUTH)
      t.equal(busy.status, 409)
      t.equal(busy.body.code, 'run_busy')
      gate.release()
      t.equal((await call).isError, false)

      const held = gateCalls(s.ex, 'look')
      const batch = post(s.app, `/v1/runs/${runId}/batches`, { batchId: 'b-holds', calls: [{ id: 'c1', name: 'look', arguments: { x: 3 } }] }, AUTH)
      await until(() => held.running() === 1)
      const waiting = client.callTool({ name: 'look', arguments: { x: 4 } })
      await settle()
      t.equal(held.running(), 1, 'the MCP call has not started while the batch holds the run')
      held.release()
      t.equal((await batch).status, 200)
      t.equal((await waiting).isError, false, 'and runs once the batch is answered')
    })
  })
}
