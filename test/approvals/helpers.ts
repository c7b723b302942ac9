/** Shared by the approvals tests: an app on a clock the test moves, tools that require approval. */
import { buildTestApp, get, post, startExecutor, tool, type TestExecutor } from '../helper.js'
import type { FastifyInstance } from 'fastify'
import type { ToolDefinition } from '../../src/model/tool.js'
import type { Config } from '../../src/config.js'
import { FakeClock } from '../clock.js'

type Tap = Parameters<typeof buildTestApp>[0]

export interface ApprovalApp {
  app: FastifyInstance
  ex: TestExecutor
  logs: string[]
  /** The app's clock: approvals expire, leases lapse and runs time out only when the test moves it. */
  clock: FakeClock
}

/** An app with `look` (read), `mail` (write, requires approval), `pay` (action, requires approval), `note` (write). */
export async function approvalApp (t: Tap, opts: { tools?: (url: string) => ToolDefinition[], config?: Partial<Config>, keysDoc?: unknown } = {}): Promise<ApprovalApp> {
  const ex = await startExecutor(t)
  const clock = new FakeClock()
  const tools = opts.tools?.(ex.url) ?? [
    tool('look', ex.url, { readOnly: true }),
    tool('mail', ex.url, { requiresApproval: true, conflictKey: 'to:{/k}' }),
    tool('pay', ex.url, { requiresApproval: true, action: {} }),
    tool('note', ex.url)
  ]
  const { app, logs } = await buildTestApp(t, {
    tools,
    clock,
    approvalSweepMs: 0,
    ...(opts.config === undefined ? {} : { config: opts.config }),
    ...(opts.keysDoc === undefined ? {} : { keysDoc: opts.keysDoc })
  })
  return { app, ex, logs, clock }
}

export async function newRun (app: FastifyInstance, body: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<string> {
  const run = await post(app, '/v1/runs', body, headers)
  if (run.status !== 201) throw new Error(`run creation failed: ${JSON.stringify(run.body)}`)
  return run.body.runId as string
}

export function decide (app: FastifyInstance, runId: string, batchId: string, decisions: unknown[], headers: Record<string, string> = {}): ReturnType<typeof post> {
  return post(app, `/v1/runs/${runId}/batches/${batchId}/approvals`, { decisions }, headers)
}

export function batchOf (app: FastifyInstance, runId: string, batchId: string, headers: Record<string, string> = {}): ReturnType<typeof get> {
  return get(app, `/v1/runs/${runId}/batches/${batchId}`, headers)
}
