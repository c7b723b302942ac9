import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, get, post, sleep } from '../helper.js'
import { FakeClock } from '../clock.js'
import { startConformanceUpstream } from '../mcp-server/conformance-upstream.js'
import { newRun, decide } from './helpers.js'

/**
 * A question an MCP server asks during a call (`elicitation/create`, SPEC
 * section 18) is a pending approval of that call, answered through the
 * approvals routes. The server is the SDK's, with the conformance suite's
 * `test_elicitation` tool: it asks for a username and an email and answers
 * what it was told.
 */
type Tap = Test
const SECRET = 'question-text-7f3a'

async function elicitingApp (t: Tap): Promise<{ app: FastifyInstance, clock: FakeClock, logs: string[] }> {
  const upstream = await startConformanceUpstream()
  t.teardown(() => upstream.close())
  const clock = new FakeClock()
  const { app, logs } = await buildTestApp(t, { clock, approvalSweepMs: 0, config: { approvalTtlSeconds: 60 } })
  await app.services.mcp.startAll([{ name: 'asker', transport: 'streamableHttp', url: upstream.url, prefix: '', trust: 'trusted' }])
  return { app, clock, logs }
}

/** Sends a batch with one test_elicitation call, and waits until its question is in the inbox. */
async function asked (app: FastifyInstance): Promise<{ runId: string, entry: any, answer: Promise<{ status: number, body: any }> }> {
  const runId = await newRun(app)
  const answer = post(app, `/v1/runs/${runId}/batches`, { calls: [{ id: 'c1', name: 'test_elicitation', arguments: { message: SECRET } }] })
  for (;;) {
    const inbox = await get(app, '/v1/approvals')
    const entry = inbox.body.approvals.find((a: any) => a.runId === runId)
    if (entry !== undefined) return { runId, entry, answer }
    await sleep(10)
  }
}

function textOf (batch: { body: any }): string {
  return JSON.stringify(batch.body.results[0].content)
}

t.test('a server question during a call is in the inbox, and approving it with content answers accept with that content', async (t) => {
  const { app, logs } = await elicitingApp(t)
  const { runId, entry, answer } = await asked(app)
  t.equal(entry.callId, 'c1')
  t.equal(entry.tool, 'test_elicitation')
  t.same(entry.arguments, { message: SECRET })
  t.equal(entry.elicitation.message, SECRET)
  t.same(entry.elicitation.requestedSchema.required, ['username', 'email'])
  const decided = await decide(app, runId, entry.batchId, [{ callId: 'c1', approve: true, content: { username: 'ada', email: 'ada@example.com' } }])
  t.equal(decided.status, 202)
  t.same(decided.body.answered, ['c1'])
  const batch = await answer
  t.equal(batch.status, 200)
  t.equal(batch.body.results[0].status, 'ok')
  t.match(textOf(batch), /accept/)
  t.match(textOf(batch), /ada@example\.com/)
  t.same((await get(app, '/v1/approvals')).body.approvals, [], 'the question is no longer pending')
  t.notOk(logs.some((l) => l.includes(SECRET)), 'neither the arguments nor the question are logged')
  t.ok(logs.some((l) => l.includes('server question answered')), 'the answer is logged, by ids')
})

t.test('content that does not match the requested schema is 400 invalid_request, and the question stays pending', async (t) => {
  const { app } = await elicitingApp(t)
  const { runId, entry, answer } = await asked(app)
  const refused = await decide(app, runId, entry.batchId, [{ callId: 'c1', approve: true, content: { username: 'ada' } }])
  t.equal(refused.status, 400)
  t.equal(refused.body.code, 'invalid_request')
  t.equal((await get(app, '/v1/approvals')).body.approvals.length, 1, 'still pending')
  const denied = await decide(app, runId, entry.batchId, [{ callId: 'c1', approve: false }])
  t.equal(denied.status, 202)
  const batch = await answer
  t.match(textOf(batch), /decline/)
  const again = await decide(app, runId, entry.batchId, [{ callId: 'c1', approve: false }])
  t.equal(again.status, 409, 'a question answered is no longer pending')
})

t.test('a server question no one answers is cancelled once the approval time passes', async (t) => {
  const { app, clock } = await elicitingApp(t)
  const { answer } = await asked(app)
  await clock.pass(59_000)
  t.equal((await get(app, '/v1/approvals')).body.approvals.length, 1, 'pending before its time')
  await clock.pass(1_000)
  const batch = await answer
  t.match(textOf(batch), /cancel/)
  t.same((await get(app, '/v1/approvals')).body.approvals, [])
})
