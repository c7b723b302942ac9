/**
 * Cancelling a run (POST /v1/runs/{runId}/cancel) and a run's timeoutMs
 * passing mid-batch (SPEC sections 3, 5 "Cancellation" and 6).
 */
import t from 'tap'
import { buildTestApp, get, post, startExecutor, tool, type ExecutorCall } from '../helper.js'
import type { BatchResponse } from '../../src/model/result.js'
import type { RunRecord } from '../../src/model/run.js'
import { MemoryStore } from '../../src/store/memory.js'
import { callGates, waitFor } from '../schedule/harness.js'
import { FakeClock } from '../clock.js'

// One app and one executor for the file; each test has its own run. Runs'
// deadlines pass when a test moves the app's clock.
const ex = await startExecutor(t)
const { hold, waitFor: held } = callGates()
const behaviour = async (call: ExecutorCall): Promise<unknown> => {
  await held(call)
  return { content: `did ${call.callId}` }
}
ex.on('look', behaviour)
ex.on('poke', behaviour)
const clock = new FakeClock()
const { app } = await buildTestApp(t, { clock, tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })

const seen = (runId: string): string[] => ex.calls.filter((c) => c.runId === runId).map((c) => c.callId)
const call = (id: string, name: string): Record<string, unknown> => ({ id, name, arguments: { k: id } })
const outcome = (body: BatchResponse): unknown[][] => body.results.map((r) => [r.callId, r.status, r.details.epoch, r.details.reason])

t.test('cancel during a batch lets running calls settle, cancels the rest and ends the run as cancelled', async (t) => {
  await post(app, '/v1/runs', { runId: 'c1', maxConcurrentTools: 2 })
  const g1 = hold('c1', 'r1')
  const g2 = hold('c1', 'r2')
  const pending = post(app, '/v1/runs/c1/batches', {
    calls: [call('r1', 'look'), call('r2', 'look'), call('r3', 'look'), call('w4', 'poke'), call('r5', 'look')]
  })
  await waitFor(() => seen('c1').length === 2, 'two reads to be running')
  const cancelled = await post(app, '/v1/runs/c1/cancel', {})
  t.equal(cancelled.status, 200)
  t.match(cancelled.body, { runId: 'c1', state: 'cancelled', terminationReason: 'cancelled' })
  g1.open()
  g2.open()
  const res = await pending
  t.equal(res.status, 200)
  t.strictSame(outcome(res.body), [
    ['r1', 'ok', 0, undefined],
    ['r2', 'ok', 0, undefined],
    ['r3', 'cancelled', 0, 'cancelled'],
    ['w4', 'cancelled', 1, 'cancelled'],
    ['r5', 'cancelled', 2, 'cancelled']
  ])
  t.equal(res.body.results[0].content, 'did r1', 'a running call keeps its real answer')
  t.strictSame(seen('c1'), ['r1', 'r2'], 'nothing started after the cancel')
  t.strictSame(res.body.run, { state: 'cancelled', terminationReason: 'cancelled' })
  t.equal(res.body.continue, false)

  const run = await get(app, '/v1/runs/c1')
  t.match(run.body, { state: 'cancelled', terminationReason: 'cancelled' })
  const later = await post(app, '/v1/runs/c1/batches', { calls: [call('r6', 'look')] })
  t.equal(later.status, 409)
  t.match(later.body, { code: 'run_not_active', terminationReason: 'cancelled' })
  t.strictSame(seen('c1'), ['r1', 'r2'])
})

t.test('the run timeoutMs passing mid-batch cancels what has not started and terminates the run with timeout', async (t) => {
  const timeoutMs = 800
  await post(app, '/v1/runs', { runId: 't1', limits: { timeoutMs } })
  // The first write is running when the run's time is up, and answers after.
  const gate = hold('t1', 'w1')
  const pending = post(app, '/v1/runs/t1/batches', { calls: [call('w1', 'poke'), call('r2', 'look'), call('r3', 'look'), call('w4', 'poke')] })
  await waitFor(() => seen('t1').length === 1, 'the write to be running')
  clock.advance(timeoutMs - 1)
  t.match((await get(app, '/v1/runs/t1')).body, { state: 'active' }, 'a moment before the deadline: active')
  await clock.pass(1)
  gate.open()
  const res = await pending
  t.equal(res.status, 200)
  t.strictSame(outcome(res.body), [
    ['w1', 'ok', 0, undefined],
    ['r2', 'cancelled', 1, 'timeout'],
    ['r3', 'cancelled', 1, 'timeout'],
    ['w4', 'cancelled', 2, 'timeout']
  ])
  t.strictSame(seen('t1'), ['w1'])
  t.strictSame(res.body.run, { state: 'terminated', terminationReason: 'timeout' })
  t.equal(res.body.continue, false)
  const body: BatchResponse = res.body
  t.ok(body.events.some((e) => e.type === 'run.terminated' && e.reason === 'timeout'), 'run.terminated is host-visible')

  const later = await post(app, '/v1/runs/t1/batches', { calls: [call('r5', 'look')] })
  t.equal(later.status, 409)
  t.match(later.body, { code: 'run_not_active', terminationReason: 'timeout' })
  t.match((await get(app, '/v1/runs/t1')).body, { state: 'terminated', terminationReason: 'timeout' })
})

t.test('the run reads timeout as soon as its deadline passes mid-batch, and a cancel after it leaves the timeout as it is', async (t) => {
  const timeoutMs = 600
  await post(app, '/v1/runs', { runId: 't2', limits: { timeoutMs }, events: 'lifecycle' })
  const gate = hold('t2', 'w1')
  const pending = post(app, '/v1/runs/t2/batches', { calls: [call('w1', 'poke'), call('r2', 'look')] })
  await waitFor(() => seen('t2').length === 1, 'the write to be running')
  await clock.pass(timeoutMs)
  t.match((await get(app, '/v1/runs/t2')).body, { state: 'terminated', terminationReason: 'timeout' }, 'terminated while its write still runs')
  const cancelled = await post(app, '/v1/runs/t2/cancel', {})
  t.match(cancelled.body, { state: 'terminated', terminationReason: 'timeout' }, 'a cancel after the deadline does not turn it into cancelled')
  gate.open()
  const res = await pending
  t.strictSame(outcome(res.body), [['w1', 'ok', 0, undefined], ['r2', 'cancelled', 1, 'timeout']])
  t.strictSame(res.body.run, { state: 'terminated', terminationReason: 'timeout' })
  const body: BatchResponse = res.body
  const terminated = body.events.filter((e) => e.type === 'run.terminated')
  t.equal(terminated.length, 1, 'one run.terminated event')
  const w1Done = body.events.find((e) => e.type === 'call.completed' && e.callId === 'w1')
  t.ok(w1Done !== undefined && terminated[0]!.seq < w1Done.seq, 'emitted at the deadline, before the running write settled')
})

t.test('cancel of a run with no batch in flight just sets it cancelled', async (t) => {
  await post(app, '/v1/runs', { runId: 'idle' })
  const res = await post(app, '/v1/runs/idle/cancel', {})
  t.equal(res.status, 200)
  t.match(res.body, { runId: 'idle', state: 'cancelled', terminationReason: 'cancelled' })
  const later = await post(app, '/v1/runs/idle/batches', { calls: [call('a', 'look')] })
  t.equal(later.status, 409)
  t.match(later.body, { code: 'run_not_active', terminationReason: 'cancelled' })
  t.strictSame(seen('idle'), [])
  const again = await post(app, '/v1/runs/idle/cancel', {})
  t.match(again.body, { state: 'cancelled' }, 'cancelling again changes nothing')
})

t.test('cancel of an unknown run is a 404 problem', async (t) => {
  const res = await post(app, '/v1/runs/nope/cancel', {})
  t.equal(res.status, 404)
  t.equal(res.body.code, 'run_not_found')
})

t.test('DELETE during a batch is stored before the batch hears it: a batch that ends meanwhile never reports active with calls cancelled by the end', async (t) => {
  // endRun waits here, as a write to a shared store takes its time.
  let endStarted!: () => void
  const endCalled = new Promise<void>((resolve) => { endStarted = resolve })
  let letEnd!: () => void
  const endGate = new Promise<void>((resolve) => { letEnd = resolve })
  class SlowEnd extends MemoryStore {
    override async endRun (runId: string, at: number): Promise<RunRecord | undefined> {
      endStarted()
      await endGate
      return await super.endRun(runId, at)
    }
  }
  const store = new SlowEnd({ runTtlMs: 60_000, maxRuns: 100, receiptRetentionMs: 60_000, maxReceipts: 1000, sweepIntervalMs: 0 })
  const { app: slow } = await buildTestApp(t, { store, tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })
  await post(slow, '/v1/runs', { runId: 'd1' })
  const g = hold('d1', 'w1')
  const pending = post(slow, '/v1/runs/d1/batches', { calls: [call('w1', 'poke'), call('w2', 'poke')] })
  await waitFor(() => seen('d1').length === 1, 'the first write to be running')
  const deleted = slow.inject({ method: 'DELETE', url: '/v1/runs/d1' })
  await endCalled
  // The batch ends while the run's end is still being written.
  g.open()
  const res = await pending
  t.equal(res.status, 200)
  t.strictSame(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok'], 'not ended yet: the batch runs to its end')
  t.strictSame(res.body.run, { state: 'active' }, 'and says so')
  letEnd()
  t.equal((await deleted).statusCode, 200)
  t.match((await get(slow, '/v1/runs/d1')).body, { state: 'ended', terminationReason: 'ended' }, 'then the run is ended')
})
