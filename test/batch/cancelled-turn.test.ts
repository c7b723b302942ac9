/**
 * A turn of one call cancelled before it started (src/batch/cancelled.ts,
 * SPEC section 16) is recorded without the run's lease, once: its batch id
 * decides between it and a batch the engine starts under the same id, so a
 * call is either run (and settles on its own) or recorded cancelled, never
 * both, and has exactly one result. A run no longer active, or past a limit
 * a new turn meets, records nothing and is left as it was.
 */
import t from 'tap'
import type { BatchRequest } from '../../src/batch/engine-types.js'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'

const executor = await startExecutor(t)
const { app } = await buildTestApp(t, { tools: [tool('look', executor.url, { readOnly: true })] })
const { engine, store } = app.services

async function newRun (options: Record<string, unknown> = {}): Promise<string> {
  const run = await post(app, '/v1/runs', options)
  t.equal(run.status, 201)
  return run.body.runId as string
}

function oneCall (runId: string, batchId: string, args: unknown = { x: 1 }): BatchRequest {
  return { runId, tenant: 'default', scopes: new Set(), batchId, calls: [{ id: `call-${batchId}`, name: 'look', arguments: args }] }
}

function sentTo (runId: string): number {
  return executor.calls.filter((c) => c.runId === runId).length
}

t.test('a turn recorded cancelled is only replayed if the engine is handed its batch after: nothing is sent', async (t) => {
  const runId = await newRun()
  const req = oneCall(runId, 'm1')
  t.equal(await engine.recordCancelled(req, await engine.prepareFirst(req, null)), true)
  const recorded = await store.getBatch(runId, 'm1')
  const answer = JSON.parse(recorded!.responseJson)
  t.match(answer, { runId, batchId: 'm1', turn: 1, state: 'completed', continue: true, run: { state: 'active' } })
  t.same(answer.results.map((r: { status: string, details: { reason?: string } }) => [r.status, r.details.reason]), [['cancelled', 'cancelled']])
  const again = await engine.execute(oneCall(runId, 'm1'))
  t.equal(again.replayed, true, 'the engine replays it')
  t.equal(again.body, recorded!.responseJson, 'its one result, as recorded')
  t.equal(sentTo(runId), 0, 'nothing was sent')
  t.equal(await engine.recordCancelled(req, undefined), false, 'nor is it recorded twice')
  const run = await store.getRun(runId)
  t.equal(run?.counters.turns, 1, 'one turn')
  t.equal(run?.inFlight, null, 'no lease taken')
})

t.test('a batch the engine started is not recorded cancelled after it', async (t) => {
  const runId = await newRun()
  const ran = await engine.execute(oneCall(runId, 'm1'))
  t.equal(JSON.parse(ran.body).results[0].status, 'ok')
  t.equal(await engine.recordCancelled(oneCall(runId, 'm1'), undefined), false)
  t.equal((await store.getBatch(runId, 'm1'))?.responseJson, ran.body, 'its answer stands')
  t.equal(sentTo(runId), 1)
  const summary = await get(app, `/v1/runs/${runId}/summary`)
  t.same(summary.body.callsByStatus, { ok: 1 })
  t.equal(summary.body.turns, 1)
})

t.test('a call preparation refused is recorded as refused, not cancelled', async (t) => {
  const runId = await newRun()
  const req = oneCall(runId, 'm1', { x: 'not a number' })
  t.equal(await engine.recordCancelled(req, await engine.prepareFirst(req, null)), true)
  const answer = JSON.parse((await store.getBatch(runId, 'm1'))!.responseJson)
  t.match(answer.results[0], { status: 'rejected', details: { reason: 'invalid_arguments' } })
  const summary = await get(app, `/v1/runs/${runId}/summary`)
  t.same(summary.body.callsByStatus, { rejected: 1 })
})

t.test('a run no longer active, past a limit a new turn meets, or of another tenant records nothing and is left as it was', async (t) => {
  const cancelled = await newRun()
  t.equal((await post(app, `/v1/runs/${cancelled}/cancel`, {})).status, 200)
  t.equal(await engine.recordCancelled(oneCall(cancelled, 'm1'), undefined), false, 'a cancelled run')
  t.equal(await store.getBatch(cancelled, 'm1'), undefined)
  t.equal((await store.getRun(cancelled))?.counters.turns, 0)

  const limited = await newRun({ limits: { maxTurns: 1 } })
  t.equal(await engine.recordCancelled(oneCall(limited, 'm1'), undefined), true, 'the turn within the limit')
  t.equal(await engine.recordCancelled(oneCall(limited, 'm2'), undefined), false, 'a turn past maxTurns')
  const run = await store.getRun(limited)
  t.equal(run?.counters.turns, 1)
  t.equal(run?.state, 'active', 'the run is not terminated by a call that never started')

  const other = await newRun()
  t.equal(await engine.recordCancelled({ ...oneCall(other, 'm1'), tenant: 'someone-else' }, undefined), false, "another tenant's run")
  t.equal(await engine.recordCancelled(oneCall('no-such-run', 'm1'), undefined), false, 'a run that is not there')
  t.equal((await store.getRun(other))?.counters.turns, 0)
})
