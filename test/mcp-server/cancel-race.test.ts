/**
 * A cancel that lands at any moment around the start of an MCP call (SPEC
 * section 16) gives one of two ends, never both: the call started and
 * settles on its own (sent once, `ok`), or it never started and is a turn
 * of its run whose call is `cancelled` (never sent). Either way the run
 * has exactly one batch for it, with one result, and its schedule and
 * lease go on: the batch route is free once the calls are answered. Swept
 * over the moments around the start of a call that waits behind a barrier,
 * through one-call turns (src/mcp-server/turns.ts) over the app's engine
 * and store, the cancel aborting the call's own signal, on the memory
 * store and on Redis. A cancel that lands as a call is being held for
 * approval withdraws it as one that lands while it waits does.
 */
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { setImmediate as tick } from 'node:timers/promises'
import { pino } from 'pino'
import { systemClock } from '../../src/clock.js'
import { CallRelays } from '../../src/dispatch/relays.js'
import { type OneCall, OneCallTurns } from '../../src/mcp-server/turns.js'
import type { RunRecord } from '../../src/model/run.js'
import type { UpdateResult } from '../../src/store/types.js'
import { type TestExecutor, buildTestApp, get, post, sleep, startExecutor, tool } from '../helper.js'
import { appStoreConfig, redisUnavailable } from '../store/harness.js'

const AUTH = { authorization: 'Bearer key-acme' }
const KEYS = { keys: [{ key: 'key-acme', tenant: 'acme', roles: ['orchestrator', 'admin'] }] }
const noRedis = await redisUnavailable()

async function setup (t: Test, store: 'memory' | 'redis'): Promise<{ app: FastifyInstance, ex: TestExecutor }> {
  const ex = await startExecutor(t)
  const config = appStoreConfig(t, store)
  const { app } = await buildTestApp(t, { keysDoc: KEYS, config, tools: [tool('look', ex.url, { readOnly: true }), tool('save', ex.url), tool('ship', ex.url, { requiresApproval: true })] })
  return { app: app as FastifyInstance, ex }
}

function callOf (run: RunRecord, name: string, x: number, signal: AbortSignal): OneCall {
  const { toolExecution, maxConcurrentTools, tools } = run.options
  return { runId: run.runId, createdAt: run.createdAt, tenant: run.tenant, scopes: new Set(), tool: name, options: { toolExecution, maxConcurrentTools, tools }, arguments: { x }, signal }
}

for (const store of ['memory', 'redis'] as const) {
  t.test(store, { skip: store === 'redis' ? noRedis ?? false : false }, async (t) => {
    const { app, ex } = await setup(t, store)
    // One-call turns as the MCP endpoint's, over the app's engine and store.
    const { engine, approvals, store: stored } = app.services
    const turns = new OneCallTurns({ engine, approvals, store: stored, clock: systemClock, logger: pino({ level: 'silent' }), relays: new CallRelays(), describe: () => '' })

    /**
     * A write (a barrier) runs; a read waits behind it; the write is
     * released and, `at` after that, the read is cancelled (`at` may
     * cancel it itself, through `abort`). Answers how the read ended,
     * having checked that it ended one way only.
     */
    async function cancelAround (t: Test, at: (runId: string, abort: AbortController, read: Promise<unknown>) => Promise<void>): Promise<string> {
      const created = await post(app, '/v1/runs', {}, AUTH)
      const runId = created.body.runId as string
      const run = (await app.services.store.getRun(runId))!
      let release!: () => void
      const gate = new Promise<void>((resolve) => { release = resolve })
      ex.on('save', async () => { await gate; return { content: 'saved' } })
      const write = turns.run(callOf(run, 'save', 1, new AbortController().signal), turns.arrive(runId))
      while (!ex.calls.some((c) => c.runId === runId)) await sleep(2)
      const abort = new AbortController()
      const read = turns.run(callOf(run, 'look', 2, abort.signal), turns.arrive(runId))
      await sleep(5)
      release()
      await at(runId, abort, read)
      abort.abort()
      const [written, answer] = await Promise.all([write, read])
      t.equal(written?._meta['toolgate/status'], 'ok')
      const listed = await app.services.store.listBatches(runId)
      t.equal(listed.length, 2, 'one batch for each call')
      t.same(listed.find((b) => b.turn === 1)?.statuses, { ok: 1 }, 'the write, first')
      const entry = listed.find((b) => b.turn === 2)
      t.equal(entry?.calls, 1, 'the read, with one result')
      const sent = ex.calls.filter((c) => c.runId === runId && c.tool === 'look').length
      const ended = entry?.statuses.cancelled === 1 ? 'cancelled' : entry?.statuses.ok === 1 ? 'ok' : JSON.stringify(entry?.statuses)
      if (ended === 'cancelled') t.equal(sent, 0, 'cancelled: never sent')
      else t.equal(sent, 1, 'started: sent once, and settled on its own')
      if (answer !== null) t.equal(answer._meta['toolgate/status'], ended, 'its caller was answered as recorded')
      else t.equal(ended, 'cancelled', 'no answer only for a call that never started')
      const free = await post(app, `/v1/runs/${runId}/batches`, { calls: [{ id: 'c1', name: 'look', arguments: { x: 3 } }] }, AUTH)
      t.equal(free.status, 200, 'the run is free for the batch route')
      return ended
    }

    t.test('cancelled before its turn comes: never sent, recorded cancelled', async (t) => {
      t.equal(await cancelAround(t, async () => {}), 'cancelled')
    })

    t.test('cancelled once sent: settles on its own', async (t) => {
      t.equal(await cancelAround(t, async (runId) => {
        while (!ex.calls.some((c) => c.runId === runId && c.tool === 'look')) await sleep(1)
      }), 'ok')
    })

    t.test('a call cancelled as it is being held for approval is withdrawn: cancelled, never sent, out of the inbox', async (t) => {
      const created = await post(app, '/v1/runs', {}, AUTH)
      const runId = created.body.runId as string
      const run = (await app.services.store.getRun(runId))!
      const abort = new AbortController()
      const store = app.services.store
      const updateRun = store.updateRun
      t.teardown(() => { store.updateRun = updateRun })
      store.updateRun = async <T>(id: string, fn: (r: RunRecord) => T): Promise<UpdateResult<T>> => {
        let held = false
        const result = await updateRun.call(store, id, (r: RunRecord) => {
          const value = fn(r)
          held = id === runId && r.waiting?.phase === 'awaiting'
          return value
        }) as UpdateResult<T>
        // The client's cancel lands as the call is held, before toolgate has answered that it waits.
        if (held && !abort.signal.aborted) abort.abort()
        return result
      }
      const answered = turns.run(callOf(run, 'ship', 1, abort.signal), turns.arrive(runId))
      const answer = await Promise.race([answered, sleep(3000).then(() => 'still held' as const)])
      store.updateRun = updateRun
      t.not(answer, 'still held', 'the cancel reached it')
      if (answer === 'still held' || answer === null) return
      t.equal(answer._meta['toolgate/status'], 'cancelled')
      t.same((await app.services.store.listBatches(runId)).map((b) => b.statuses), [{ cancelled: 1 }], 'one batch, one result')
      t.equal(ex.calls.filter((c) => c.runId === runId).length, 0, 'never sent')
      const inbox = (await get(app, '/v1/approvals', AUTH)).body.approvals as Array<{ runId: string }>
      t.same(inbox.filter((a) => a.runId === runId), [], 'out of the inbox')
    })

    /** Cancels the read as the store is asked for its `step`-th atomic step of the run after the write is released (the write's answer, the read's start, its admission, its answer). */
    function atStoreStep (step: number) {
      return async (runId: string, abort: AbortController, read: Promise<unknown>): Promise<void> => {
        const store = app.services.store
        const methods = ['updateRun', 'updateRunWithBatchId', 'completeBatch', 'recordBatch'] as const
        const saved = methods.map((m) => store[m])
        let steps = 0
        for (const [i, m] of methods.entries()) {
          const original = saved[i] as (...args: unknown[]) => Promise<unknown>
          ;(store as unknown as Record<string, unknown>)[m] = (...args: unknown[]) => {
            if (args[0] === runId && ++steps === step) abort.abort()
            return original.apply(store, args)
          }
        }
        try {
          await Promise.race([read, new Promise((resolve) => abort.signal.addEventListener('abort', resolve, { once: true }))])
        } finally {
          for (const [i, m] of methods.entries()) (store as unknown as Record<string, unknown>)[m] = saved[i]
        }
      }
    }

    t.test('cancelled as the store takes each step after the write is released: one end or the other, once', async (t) => {
      const ends: string[] = []
      for (let step = 1; step <= 8; step++) ends.push(await cancelAround(t, atStoreStep(step)))
      t.comment(`ends: ${ends.join(' ')}`)
      t.equal(ends[0], 'cancelled', 'cancelled as the write is answered: the read never started')
      t.ok(ends.includes('ok'), 'and, at a later step, it had started and settled on its own')
    })

    t.test('cancelled at every moment between: one end or the other, once', async (t) => {
      const ends: string[] = []
      for (let ticks = 0; ticks <= 40; ticks++) {
        ends.push(await cancelAround(t, async () => { for (let i = 0; i < ticks; i++) await tick() }))
      }
      for (let ms = 1; ms <= 8; ms++) ends.push(await cancelAround(t, () => sleep(ms)))
      t.comment(`ends: ${ends.join(' ')}`)
      t.ok(ends.every((e) => e === 'ok' || e === 'cancelled'), 'ok or cancelled, nothing else')
    })
  })
}
