/**
 * Bodiless POSTs sent with `Content-Type: application/json` and an empty
 * body, as client libraries that set the JSON type on every request send them.
 */
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { callGates, waitFor } from '../schedule/harness.js'

async function emptyJsonPost (app: FastifyInstance, url: string): Promise<{ status: number, body: any }> {
  const res = await app.inject({ method: 'POST', url, payload: '', headers: { 'content-type': 'application/json' } })
  return { status: res.statusCode, body: res.body === '' ? undefined : JSON.parse(res.body) }
}

t.test('a cancel with a JSON content type and an empty body is accepted and cancels the queued write', async (t) => {
  const ex = await startExecutor(t)
  const { hold, waitFor: held } = callGates()
  ex.on('look', async (call) => { await held(call); return { content: 'read' } })
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })
  await post(app, '/v1/runs', { runId: 'r1' })
  const gate = hold('r1', 'a')
  const pending = post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }, { id: 'w', name: 'poke', arguments: {} }] })
  await waitFor(() => ex.calls.length === 1, 'the read to be running')
  const cancelled = await emptyJsonPost(app, '/v1/runs/r1/cancel')
  t.equal(cancelled.status, 200)
  t.match(cancelled.body, { runId: 'r1', state: 'cancelled' })
  gate.open()
  const res = await pending
  t.strictSame(res.body.results.map((r: { status: string }) => r.status), ['ok', 'cancelled'])
  t.strictSame(ex.calls.map((c) => c.callId), ['a'], 'the queued write never ran')
})

t.test('every bodiless POST takes an empty JSON body; a route that needs a body still refuses it', async (t) => {
  const { app } = await buildTestApp(t)
  const created = await emptyJsonPost(app, '/v1/runs')
  t.equal(created.status, 201, 'creating a run (every field optional)')
  const runId = created.body.runId as string
  t.equal((await emptyJsonPost(app, `/v1/runs/${runId}/cancel`)).status, 200, 'cancel')
  const batch = await emptyJsonPost(app, `/v1/runs/${runId}/batches`)
  t.equal(batch.status, 400)
  t.equal(batch.body.code, 'invalid_request', 'a batch needs its calls')
  const blank = await app.inject({ method: 'POST', url: '/v1/runs', payload: ' \n', headers: { 'content-type': 'application/json' } })
  t.equal(blank.statusCode, 201, 'a blank body is no body too')
})
