import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, type ElicitResult, ElicitResultSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { buildTestApp, get, post, sleep } from '../helper.js'
import { FakeClock } from '../clock.js'
import { startConformanceUpstream } from '../mcp-server/conformance-upstream.js'
import { startSdkHttpServer } from '../mcp/sdk-http-server.js'
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

/** An app on a clock the test moves, with the server at `url` (the conformance upstream by default) imported with an empty prefix. */
async function elicitingApp (t: Tap, server: { url?: string, timeoutMs?: number, maxTimeoutMs?: number } = {}): Promise<{ app: FastifyInstance, clock: FakeClock, logs: string[] }> {
  let url = server.url
  if (url === undefined) {
    const upstream = await startConformanceUpstream()
    t.teardown(() => upstream.close())
    url = upstream.url
  }
  const clock = new FakeClock()
  const { app, logs } = await buildTestApp(t, { clock, approvalSweepMs: 0, config: { approvalTtlSeconds: 60 } })
  const { timeoutMs, maxTimeoutMs } = server
  await app.services.mcp.startAll([{
    name: 'asker',
    transport: 'streamableHttp',
    url,
    prefix: '',
    trust: 'trusted',
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(maxTimeoutMs === undefined ? {} : { maxTimeoutMs })
  }])
  return { app, clock, logs }
}

/** Sends a batch with one call of `tool` (test_elicitation by default), and waits until its question is in the inbox. */
async function asked (app: FastifyInstance, tool = 'test_elicitation'): Promise<{ runId: string, entry: any, answer: Promise<{ status: number, body: any }> }> {
  const runId = await newRun(app)
  const answer = post(app, `/v1/runs/${runId}/batches`, { calls: [{ id: 'c1', name: tool, arguments: { message: SECRET } }] })
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

t.test("the call's timeout does not run while a person is being asked: answered long after timeoutMs, the call ends with the server's result", async (t) => {
  const { app, clock } = await elicitingApp(t, { timeoutMs: 300 })
  const { runId, entry, answer } = await asked(app)
  // Past timeoutMs and its default total (10 times) on toolgate's clock, and past timeoutMs on the wall clock.
  await clock.pass(30_000)
  await sleep(1000)
  t.equal((await get(app, '/v1/approvals')).body.approvals.length, 1, 'still pending')
  const decided = await decide(app, runId, entry.batchId, [{ callId: 'c1', approve: true, content: { username: 'ada', email: 'ada@example.com' } }])
  t.equal(decided.status, 202)
  const batch = await answer
  t.equal(batch.body.results[0].status, 'ok', JSON.stringify(batch.body.results[0]))
  t.match(textOf(batch), /accept/)
  t.match(textOf(batch), /ada@example\.com/)
})

/**
 * A server whose tools ask a question, then: `ask_and_return` answers the
 * call once the test lets it, without waiting for the question's answer;
 * `ask_then_stall` waits for the answer, then works until it is cancelled.
 * `heard` is what its questions were answered.
 */
interface Questioner { url: string, heard: Array<Promise<ElicitResult>>, release: () => void, cancelled: Promise<void> }

async function startQuestioner (t: Tap): Promise<Questioner> {
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  let cancelled!: () => void
  const state: Questioner = { url: '', heard: [], release, cancelled: new Promise((resolve) => { cancelled = resolve }) }
  const question = { message: 'Which account?', requestedSchema: { type: 'object' as const, properties: { account: { type: 'string' as const } }, required: ['account'] } }
  const build = (): Server => {
    const server = new Server({ name: 'questioner', version: '1.0.0' }, { capabilities: { tools: {} } })
    const NO_ARGS = { type: 'object' as const, properties: {} }
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: 'ask_and_return', inputSchema: NO_ARGS, annotations: { readOnlyHint: true } }, { name: 'ask_then_stall', inputSchema: NO_ARGS, annotations: { readOnlyHint: true } }]
    }))
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const heard = extra.sendRequest({ method: 'elicitation/create', params: question }, ElicitResultSchema, { timeout: 600_000 })
      state.heard.push(heard)
      if (request.params.name === 'ask_and_return') {
        heard.catch(() => {})
        await released
        return { content: [{ type: 'text', text: 'done without the answer' }] }
      }
      const answer = await heard
      if (!extra.signal.aborted) await new Promise<void>((resolve) => { extra.signal.addEventListener('abort', () => { resolve() }, { once: true }) })
      cancelled()
      return { content: [{ type: 'text', text: `too late: ${answer.action}` }] }
    })
    return server
  }
  const upstream = await startSdkHttpServer(build)
  t.teardown(() => upstream.close())
  state.url = upstream.url
  return state
}

t.test('a question still waiting when its call ends is withdrawn: gone from the inbox, the server answered cancel, and a later decision refused', async (t) => {
  const questioner = await startQuestioner(t)
  const { app, logs } = await elicitingApp(t, { url: questioner.url })
  const { runId, entry, answer } = await asked(app, 'ask_and_return')
  questioner.release()
  const batch = await answer
  t.equal(batch.body.results[0].status, 'ok')
  t.match(textOf(batch), /done without the answer/)
  t.same((await get(app, '/v1/approvals')).body.approvals, [], 'no longer in the inbox')
  const late = await decide(app, runId, entry.batchId, [{ callId: 'c1', approve: true, content: { account: 'acme' } }])
  t.equal(late.status, 409)
  t.equal(late.body.code, 'approval_not_pending')
  t.same(await questioner.heard[0], { action: 'cancel' }, 'the server is told no answer will come, and never the late decision')
  t.equal(questioner.heard.length, 1)
  t.ok(logs.some((l) => l.includes('server question answered') && l.includes('"by":"call_ended"')), 'the withdrawal is logged as the call ending it')
})

t.test('once a question is answered the idle timeout restarts in full, and the call still ends on it', async (t) => {
  const questioner = await startQuestioner(t)
  const { app, clock } = await elicitingApp(t, { url: questioner.url, timeoutMs: 300, maxTimeoutMs: 100_000 })
  const { runId, entry, answer } = await asked(app, 'ask_then_stall')
  let ended = false
  void answer.then(() => { ended = true })
  // Past timeoutMs on toolgate's clock and on the wall clock while the person thinks.
  await clock.pass(50_000)
  await sleep(1000)
  const decided = await decide(app, runId, entry.batchId, [{ callId: 'c1', approve: true, content: { account: 'acme' } }])
  t.equal(decided.status, 202)
  t.same(await questioner.heard[0], { action: 'accept', content: { account: 'acme' } })
  await clock.pass(299)
  t.notOk(ended, 'the idle timeout restarted in full when the question was answered')
  await clock.pass(1)
  const batch = await answer
  t.equal(batch.body.results[0].status, 'error')
  t.equal(batch.body.results[0].details.cause, 'timeout')
  await questioner.cancelled
  t.pass('the server was told the call was cancelled')
})
