/**
 * Tenant-scoped conflict keys through the batch route (SPEC section 17):
 * same-key calls of different runs never overlap and reach the executor
 * with increasing fencing tokens; a key held past conflictWaitMs blocks the
 * call (conflict_key_busy); an unresolved uncertain write with the key
 * blocks later writes with it from every run until it is resolved, and
 * GET /v1/uncertain lists it.
 */
import t from 'tap'
import { MemoryStore } from '../../src/store/memory.js'
import { FakeClock } from '../clock.js'
import { buildTestApp, get, holdCalls, post, sleep, startExecutor, tool } from '../helper.js'

const SECRET = 'hunter2-never-logged'

async function setup (t: Parameters<typeof buildTestApp>[0], conflictWaitMs = 30_000): Promise<{ app: Awaited<ReturnType<typeof buildTestApp>>['app'], logs: string[], ex: Awaited<ReturnType<typeof startExecutor>> }> {
  const ex = await startExecutor(t)
  const { app, logs } = await buildTestApp(t, {
    tools: [
      tool('edit', ex.url, { conflictKey: 'file:{/k}', conflictScope: 'tenant', conflictWaitMs }),
      tool('peek', ex.url, { conflictKey: 'file:{/k}', conflictScope: 'tenant', readOnly: true, conflictWaitMs }),
      tool('note', ex.url, { conflictKey: 'file:{/k}' })
    ]
  })
  return { app, logs, ex }
}

async function newRun (app: Awaited<ReturnType<typeof buildTestApp>>['app']): Promise<string> {
  const run = await post(app, '/v1/runs', {})
  return run.body.runId as string
}

function send (app: Awaited<ReturnType<typeof buildTestApp>>['app'], runId: string, calls: unknown[]): Promise<{ status: number, body: any }> {
  return post(app, `/v1/runs/${runId}/batches`, { calls })
}

t.test('a call whose tenant key another run holds waits for it; the executor sees them one after the other, with increasing fencing tokens', async (t) => {
  const { app, ex } = await setup(t)
  const held = holdCalls(ex, 'edit', { content: 'edited' })
  const [a, b] = [await newRun(app), await newRun(app)]
  const first = send(app, a, [{ id: 'c1', name: 'edit', arguments: { k: 'readme', secret: SECRET } }])
  await held.started
  const second = send(app, b, [{ id: 'c1', name: 'edit', arguments: { k: 'readme' } }])
  await sleep(100)
  t.equal(ex.calls.length, 1, 'the second call waits while the key is held')
  held.release()
  const [ra, rb] = await Promise.all([first, second])
  t.equal(ra.body.results[0].status, 'ok')
  t.equal(rb.body.results[0].status, 'ok')
  t.equal(ex.calls.length, 2)
  const [c1, c2] = ex.calls
  t.ok(c1!.endedAt! <= c2!.startedAt, 'no overlap')
  const tokens = ex.calls.map((c) => c.body.fencingToken ?? undefined)
  t.same(tokens, [undefined, undefined], 'the token is a header, not part of the body')
})

t.test('the fencing token is sent as the Toolgate-Fencing-Token header, a decimal integer increasing per key; a run-scoped key sends none', async (t) => {
  const { app, ex } = await setup(t)
  const seen: Array<string | undefined> = []
  for (const name of ['edit', 'peek', 'note']) {
    ex.on(name, (_call, req) => {
      seen.push(req.headers['toolgate-fencing-token'] as string | undefined)
      return { content: 'ok' }
    })
  }
  const runId = await newRun(app)
  const res = await send(app, runId, [
    { id: 'c1', name: 'edit', arguments: { k: 'a' } },
    { id: 'c2', name: 'peek', arguments: { k: 'a' } },
    { id: 'c3', name: 'edit', arguments: { k: 'a' } },
    { id: 'c4', name: 'note', arguments: { k: 'a' } }
  ])
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok', 'ok'])
  t.equal(seen[3], undefined, 'a run-scoped key has no fencing token')
  const tokens = seen.slice(0, 3).map((s) => BigInt(s!))
  t.ok(tokens[0]! < tokens[1]! && tokens[1]! < tokens[2]!, `strictly increasing: ${tokens.join(', ')}`)
})

t.test('a key held for the whole conflictWaitMs blocks the call: conflict_key_busy, a model-readable content, counted per tool; nothing is sent', async (t) => {
  const { app, ex, logs } = await setup(t, 0)
  const [a, b] = [await newRun(app), await newRun(app)]
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  let arrived!: () => void
  const started = new Promise<void>((resolve) => { arrived = resolve })
  ex.on('edit', async (call) => {
    if (call.runId === a) {
      arrived()
      await gate
    }
    return { content: 'edited' }
  })
  const first = send(app, a, [{ id: 'c1', name: 'edit', arguments: { k: 'readme', secret: SECRET } }])
  await started
  const held = { release }
  const res = await send(app, b, [{ id: 'c1', name: 'edit', arguments: { k: 'readme', secret: SECRET } }, { id: 'c2', name: 'edit', arguments: { k: 'other' } }])
  held.release()
  await first
  const [busy, free] = res.body.results
  t.equal(busy.status, 'blocked')
  t.equal(busy.details.reason, 'conflict_key_busy')
  t.equal(busy.isError, true)
  const content = JSON.parse(busy.content)
  t.equal(content.error, 'conflict_key_busy')
  t.match(content.message, /another agent is changing the same resource/)
  t.equal(free.status, 'ok', 'another key is free')
  t.equal(ex.calls.filter((c) => c.runId === b && c.callId === 'c1').length, 0, 'the blocked call was not sent')
  const metrics = String((await get(app, '/metrics')).body)
  t.match(metrics, /toolgate_conflict_blocked_total\{tool="edit"\} 1/)
  t.match(metrics, /toolgate_conflict_waits_seconds_count \d+/)
  t.notMatch(metrics, SECRET, 'arguments are never in metrics')
  t.notOk(logs.some((line) => line.includes(SECRET)), 'arguments are never logged')
})

t.test('an unresolved uncertain write with a tenant key blocks later writes with the key from every run (blockedByRun), not reads nor other keys, until it is resolved; GET /v1/uncertain lists it', async (t) => {
  const { app, ex } = await setup(t)
  ex.on('edit', (call, _req, reply) => call.callId === 'lost' ? reply.code(503).send({ error: 'down' }) : { content: 'edited' })
  const [a, b] = [await newRun(app), await newRun(app)]
  const ra = await send(app, a, [{ id: 'lost', name: 'edit', arguments: { k: 'readme' } }])
  t.equal(ra.body.results[0].status, 'uncertain')
  const operationId = ra.body.results[0].details.operationId as string
  const listed = await get(app, '/v1/uncertain')
  t.equal(listed.status, 200)
  t.match(listed.body, { uncertain: [{ operationId, runId: a, callId: 'lost', tool: 'edit', conflictKey: 'file:readme', conflictScope: 'tenant', cause: String }] })
  t.match(listed.body.uncertain[0].since, /^\d{4}-\d\d-\d\dT/)

  const rb = await send(app, b, [
    { id: 'w1', name: 'edit', arguments: { k: 'readme', x: 2 } },
    { id: 'r1', name: 'peek', arguments: { k: 'readme' } },
    { id: 'w2', name: 'edit', arguments: { k: 'other' } }
  ])
  const [blocked, read, other] = rb.body.results
  t.equal(blocked.status, 'blocked')
  t.match(blocked.details, { reason: 'unresolved_uncertain_write', blockedBy: 'lost', blockedByOperation: operationId, blockedByRun: a })
  t.match(JSON.parse(blocked.content), { error: 'unresolved_uncertain_write', blockedBy: 'lost' })
  t.equal(read.status, 'ok', 'a read is not blocked')
  t.equal(other.status, 'ok', 'another key is not blocked')
  t.equal(ex.calls.filter((c) => c.callId === 'w1').length, 0, 'the blocked write was not sent')

  const resolved = await post(app, `/v1/receipts/${operationId}/resolve`, { status: 'committed' })
  t.equal(resolved.status, 200)
  t.same((await get(app, '/v1/uncertain')).body, { uncertain: [] })
  const again = await send(app, b, [{ id: 'w3', name: 'edit', arguments: { k: 'readme', x: 3 } }])
  t.equal(again.body.results[0].status, 'ok', 'resolved: the key is free again')
})

t.test("a tenant-scoped uncertain write outlives its run: once the run has expired it still blocks the key from the tenant's other runs, is listed, and is resolved by hand", async (t) => {
  const clock = new FakeClock()
  const store = new MemoryStore({ runTtlMs: 60_000, maxRuns: 100, receiptRetentionMs: 3_600_000, maxReceipts: 100, clock, sweepIntervalMs: 0 })
  const ex = await startExecutor(t)
  ex.on('edit', (call, _req, reply) => call.callId === 'lost' ? reply.code(503).send({ error: 'down' }) : { content: 'edited' })
  const { app } = await buildTestApp(t, { store, clock, config: { runTtlSeconds: 60 }, tools: [tool('edit', ex.url, { conflictKey: 'file:{/k}', conflictScope: 'tenant' })] })
  const ra = await post(app, '/v1/runs', { runId: 'short-lived' })
  t.equal(ra.status, 201)
  const lost = await send(app, 'short-lived', [{ id: 'lost', name: 'edit', arguments: { k: 'readme' } }])
  t.equal(lost.body.results[0].status, 'uncertain')
  const operationId = lost.body.results[0].details.operationId as string

  clock.advance(61_000)
  t.equal((await get(app, '/v1/runs/short-lived')).status, 404, 'the run has expired')
  const b = await newRun(app)
  const blocked = await send(app, b, [{ id: 'w1', name: 'edit', arguments: { k: 'readme', x: 2 } }])
  t.equal(blocked.body.results[0].status, 'blocked', 'the key stays blocked: the write may have changed the resource')
  t.match(blocked.body.results[0].details, { reason: 'unresolved_uncertain_write', blockedByOperation: operationId, blockedByRun: 'short-lived' })
  t.equal(ex.calls.filter((c) => c.callId === 'w1').length, 0, 'and nothing was sent')
  t.match((await get(app, '/v1/uncertain')).body, { uncertain: [{ operationId, runId: 'short-lived', conflictScope: 'tenant' }] })

  const recheck = await post(app, `/v1/receipts/${operationId}/resolve`, { recheck: true })
  t.equal(recheck.status, 409)
  t.equal(recheck.body.code, 'no_status_url')
  t.match(recheck.body.detail, /run is gone/)
  const resolved = await post(app, `/v1/receipts/${operationId}/resolve`, { status: 'committed' })
  t.equal(resolved.status, 200)
  t.match(resolved.body, { operationId, runId: 'short-lived', resolved: true, how: 'manual' })
  t.same((await get(app, '/v1/uncertain')).body, { uncertain: [] })
  const again = await send(app, b, [{ id: 'w2', name: 'edit', arguments: { k: 'readme', x: 3 } }])
  t.equal(again.body.results[0].status, 'ok', 'resolved: the key is free again')
})
