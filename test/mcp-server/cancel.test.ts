import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { buildTestApp, get, post, sleep, startExecutor, tool } from '../helper.js'

/**
 * `notifications/cancelled` for a call held for approval (SPEC section 16):
 * the call has not started, so it ends `cancelled` (never `denied`: no one
 * declined it), leaves the inbox, and counts as no decision.
 */
const executor = await startExecutor(t)
const { app } = await buildTestApp(t, {
  config: { host: '127.0.0.1' },
  tools: [tool('ship', executor.url, { requiresApproval: true })]
})
const base = await app.listen({ port: 0, host: '127.0.0.1' })

async function connect (t: Test): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
  t.teardown(() => client.close())
  return client
}

interface Entry { runId: string, batchId: string, callId: string }

async function held (): Promise<Entry> {
  for (;;) {
    const entry = (await get(app, '/v1/approvals')).body.approvals[0] as Entry | undefined
    if (entry !== undefined) return entry
    await sleep(10)
  }
}

/** The batch's stored answer, once it has one. */
async function answered (e: Entry): Promise<any> {
  for (;;) {
    const batch = await get(app, `/v1/runs/${e.runId}/batches/${e.batchId}`)
    if (batch.body.results !== undefined && batch.body.state !== 'awaiting_approval') return batch.body
    await sleep(10)
  }
}

t.test('a held call the client cancels ends cancelled, not denied, and nothing runs', async (t) => {
  const client = await connect(t)
  // The SDK cannot cancel a request whose id is 0: initialize took it.
  const abort = new AbortController()
  const call = client.callTool({ name: 'ship', arguments: { k: 'order-1' } }, undefined, { signal: abort.signal })
  const entry = await held()
  abort.abort('the user pressed stop')
  await t.rejects(call, 'the client stopped waiting')
  const batch = await answered(entry)
  t.equal(batch.results.length, 1)
  t.equal(batch.results[0].status, 'cancelled')
  t.equal(batch.results[0].details.reason, 'cancelled')
  t.equal(batch.results[0].details.approval, undefined, 'no one decided it')
  t.same((await get(app, '/v1/approvals')).body.approvals, [], 'it left the inbox')
  t.equal(executor.calls.length, 0, 'the call never ran')
  const late = await post(app, `/v1/runs/${entry.runId}/batches/${entry.batchId}/approvals`, { decisions: [{ callId: entry.callId, approve: true }] })
  t.equal(late.status, 409, 'a decision after the cancel finds nothing pending')
  const summary = await get(app, `/v1/runs/${entry.runId}/summary`)
  t.match(summary.body.approvals, { approved: 0, denied: 0, expired: 0 })
})

t.test('a held call a person decided first stands: a cancel after the decision changes nothing', async (t) => {
  const client = await connect(t)
  const abort = new AbortController()
  const call = client.callTool({ name: 'ship', arguments: { k: 'order-2' } }, undefined, { signal: abort.signal })
  const entry = await held()
  const decided = await post(app, `/v1/runs/${entry.runId}/batches/${entry.batchId}/approvals`, { decisions: [{ callId: entry.callId, approve: false, reason: 'not today' }] })
  t.equal(decided.status, 200)
  abort.abort('too late')
  await call.catch(() => {})
  const batch = await answered(entry)
  t.equal(batch.results[0].status, 'denied')
  t.equal(batch.results[0].details.approval.decision, 'denied')
})
