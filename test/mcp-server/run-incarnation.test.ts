/**
 * An MCP session is bound to one run, not to its id (SPEC sections 16, 19):
 * once that run has expired and a run of the same id is created again, the
 * old session's calls say its run ended, its tools/list is an error, and its
 * DELETE ends nothing; a new session serves the new run.
 */
import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { FastifyInstance } from 'fastify'
import { MemoryStore } from '../../src/store/memory.js'
import { FakeClock } from '../clock.js'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'

const TTL_MS = 60_000
const AUTH = { authorization: 'Bearer key-acme' }

async function setup (t: Test): Promise<{ app: FastifyInstance, base: string, clock: FakeClock, executor: Awaited<ReturnType<typeof startExecutor>> }> {
  const clock = new FakeClock()
  const store = new MemoryStore({ runTtlMs: TTL_MS, maxRuns: 100, receiptRetentionMs: TTL_MS, maxReceipts: 100, clock, sweepIntervalMs: 0 })
  const executor = await startExecutor(t)
  const { app } = await buildTestApp(t, {
    store,
    clock,
    keysDoc: { keys: [{ key: 'key-acme', tenant: 'acme', roles: ['orchestrator'] }] },
    config: { host: '127.0.0.1', runTtlSeconds: TTL_MS / 1000 },
    tools: [tool('look', executor.url, { readOnly: true }), tool('peek', executor.url, { readOnly: true })]
  })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app: app as FastifyInstance, base, clock, executor }
}

async function connect (t: Test, base: string, path: string): Promise<{ client: Client, transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}${path}`), { requestInit: { headers: AUTH } })
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  return { client, transport }
}

/** Lets the run expire while the session stays in use: the idle sweep (every 60 s, sessions idle for the run's TTL) keeps it. */
async function expireRunKeepSession (clock: FakeClock, client: Client): Promise<void> {
  clock.advance(TTL_MS - 10_000)
  await client.ping()
  clock.advance(15_000)
}

t.test("a session bound to a run that expired does not serve a later run of the same id", async (t) => {
  const { app, base, clock, executor } = await setup(t)
  t.equal((await post(app, '/v1/runs', { runId: 'reuse' }, AUTH)).status, 201)
  const old = await connect(t, base, '/v1/runs/reuse/mcp')
  t.equal((await old.client.callTool({ name: 'look', arguments: {} })).isError, false)
  await expireRunKeepSession(clock, old.client)
  t.equal((await get(app, '/v1/runs/reuse', AUTH)).status, 404, 'the run expired')
  t.equal((await post(app, '/v1/runs', { runId: 'reuse', tools: ['peek'] }, AUTH)).status, 201, 'a new run of the same id')

  const sent = executor.calls.length
  const stale = await old.client.callTool({ name: 'look', arguments: {} })
  t.equal(stale.isError, true, "the old session's call says its run ended")
  t.equal(stale._meta?.['toolgate/reason'], 'run_not_active')
  const notOffered = await old.client.callTool({ name: 'peek', arguments: {} })
  t.equal(notOffered.isError, true)
  t.equal(executor.calls.length, sent, 'nothing was sent for the old session')
  await t.rejects(old.client.listTools(), 'its tools/list is an error')

  const fresh = await connect(t, base, '/v1/runs/reuse/mcp')
  t.same((await fresh.client.listTools()).tools.map((x) => x.name), ['peek'], 'a new session serves the new run, with its allow-list')
  t.equal((await fresh.client.callTool({ name: 'peek', arguments: {} })).isError, false)
  t.equal(executor.calls.at(-1)?.runId, 'reuse')
})

t.test('the DELETE of a /mcp session whose run expired does not end a later run of that id', async (t) => {
  const { app, base, clock, executor } = await setup(t)
  const old = await connect(t, base, '/mcp')
  await old.client.callTool({ name: 'look', arguments: {} })
  const runId = executor.calls.at(-1)!.runId
  await expireRunKeepSession(clock, old.client)
  t.equal((await post(app, '/v1/runs', { runId }, AUTH)).status, 201, 'the id is taken again')
  await old.transport.terminateSession()
  const after = await get(app, `/v1/runs/${runId}`, AUTH)
  t.equal(after.status, 200)
  t.equal(after.body.state, 'active', 'the new run is not ended by the old session')
})
