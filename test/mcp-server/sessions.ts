/**
 * Helpers of the tests that drive a run's MCP calls through the real
 * endpoint: an SDK client bound to a run created on the API, and an
 * executor that holds a tool's calls until released.
 */
import type { Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { FastifyInstance } from 'fastify'
import { type TestExecutor, post } from '../helper.js'

/** A bound session: the SDK's client, its transport (to end the session) and the run. */
export interface BoundSession { client: Client, transport: StreamableHTTPClientTransport, runId: string }

/** A run created with `options` on the API, and an MCP client bound to it (`/v1/runs/{runId}/mcp`), closed on teardown. */
export async function boundSession (t: Test, s: { app: FastifyInstance, base: string }, auth: Record<string, string>, options: Record<string, unknown> = {}): Promise<BoundSession> {
  const run = await post(s.app, '/v1/runs', options, auth)
  t.equal(run.status, 201)
  const runId = run.body.runId as string
  const transport = new StreamableHTTPClientTransport(new URL(`${s.base}/v1/runs/${runId}/mcp`), { requestInit: { headers: auth } })
  const client = new Client({ name: 'toolgate-test', version: '1.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  return { client, transport, runId }
}

/** Holds every call of `name` at the executor until `release`, then answers `answer(x)`; `running` counts those held now. */
export function gateCalls (ex: TestExecutor, name: string, answer: (x: unknown) => unknown = () => ({ content: 'done' })): { release: () => void, running: () => number } {
  let open!: () => void
  const gate = new Promise<void>((resolve) => { open = resolve })
  let running = 0
  ex.on(name, async (call) => {
    running++
    await gate
    running--
    return answer(call.arguments.x) as never
  })
  return { release: open, running: () => running }
}
