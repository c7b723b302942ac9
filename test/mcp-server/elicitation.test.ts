import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { buildTestApp, get, post, sleep } from '../helper.js'
import { startConformanceUpstream } from './conformance-upstream.js'

/**
 * An imported server's question during a call whose caller is an MCP client
 * of toolgate's endpoint that declared `elicitation` (SPEC sections 16 and
 * 18): the client is asked too, and the first answer, from the client or
 * from the approvals route, wins; the other is withdrawn.
 */
const upstream = await startConformanceUpstream()
t.teardown(() => upstream.close())
const { app } = await buildTestApp(t, { config: { host: '127.0.0.1' } })
await app.services.mcp.startAll([{ name: 'asker', transport: 'streamableHttp', url: upstream.url, prefix: '', trust: 'trusted' }])
const base = await app.listen({ port: 0, host: '127.0.0.1' })

async function connect (t: Test): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities: { elicitation: {} } })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
  t.teardown(() => client.close())
  return client
}

async function pendingQuestion (): Promise<any> {
  for (;;) {
    const entry = (await get(app, '/v1/approvals')).body.approvals[0]
    if (entry !== undefined) return entry
    await sleep(10)
  }
}

function textOf (result: { content: unknown[] }): string {
  return JSON.stringify(result.content)
}

t.test("the MCP client's answer to a server's question reaches the server, and the inbox no longer shows it", async (t) => {
  const client = await connect(t)
  let release!: () => void
  const seen = new Promise<void>((resolve) => { release = resolve })
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    t.equal(request.params.message, 'Who are you?')
    // The question is in the inbox while the client's user thinks.
    await seen
    return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } }
  })
  const call = client.request({ method: 'tools/call', params: { name: 'test_elicitation', arguments: { message: 'Who are you?' } } }, CallToolResultSchema)
  const entry = await pendingQuestion()
  t.equal(entry.elicitation.message, 'Who are you?')
  release()
  const result = await call
  t.notOk(result.isError)
  t.match(textOf(result), /accept/)
  t.match(textOf(result), /ada@example\.com/)
  t.same((await get(app, '/v1/approvals')).body.approvals, [])
  const late = await post(app, `/v1/runs/${entry.runId as string}/batches/${entry.batchId as string}/approvals`, { decisions: [{ callId: entry.callId, approve: false }] })
  t.equal(late.status, 409, 'a decision after the client answered finds nothing pending')
})

t.test("a person's decision answers the server first, and the question put to the MCP client is withdrawn", async (t) => {
  const client = await connect(t)
  let withdrawn!: () => void
  const cancelled = new Promise<void>((resolve) => { withdrawn = resolve })
  let questions = 0
  client.setRequestHandler(ElicitRequestSchema, async (_request, extra) => {
    // The SDK cannot cancel a request whose id is 0 (it takes the id for missing): the session's first question is answered.
    if (questions++ === 0) return { action: 'decline' }
    // This user never answers later questions; each is withdrawn once a person decides.
    await new Promise<void>((resolve) => { extra.signal.addEventListener('abort', () => resolve(), { once: true }) })
    withdrawn()
    return { action: 'cancel' }
  })
  const first = await client.request({ method: 'tools/call', params: { name: 'test_elicitation', arguments: { message: 'Who?' } } }, CallToolResultSchema)
  t.match(textOf(first), /decline/, 'the client declined the first question')
  const call = client.request({ method: 'tools/call', params: { name: 'test_elicitation', arguments: { message: 'Who?' } } }, CallToolResultSchema)
  const entry = await pendingQuestion()
  const decided = await post(app, `/v1/runs/${entry.runId as string}/batches/${entry.batchId as string}/approvals`, { decisions: [{ callId: entry.callId, approve: true, content: { username: 'bob', email: 'bob@example.com' } }] })
  t.equal(decided.status, 202)
  const result = await call
  t.match(textOf(result), /accept/)
  t.match(textOf(result), /bob@example\.com/)
  await cancelled
  t.pass('the client was told to drop the question')
})
