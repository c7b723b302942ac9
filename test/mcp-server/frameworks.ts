/**
 * What the agent-framework tests share (frameworks-*.test.ts): toolgate
 * with a recording executor, runs created with options and their MCP URL,
 * the same-key overlaps the executor saw, and a person deciding held calls
 * in the approvals inbox. The frameworks' own clients drive toolgate's
 * `/mcp`; their models are scripted.
 */
import type { FastifyInstance } from 'fastify'
import { buildTestApp, get, post, sleep, startExecutor, tool, type ExecutorCall, type TestExecutor } from '../helper.js'

type Tap = Parameters<typeof buildTestApp>[0]

export const KEY = 'key-frameworks'
export const AUTH = { authorization: `Bearer ${KEY}` }

export interface Toolgate {
  app: FastifyInstance
  executor: TestExecutor
  /** The base URL toolgate listens on. */
  base: string
  logs: string[]
}

/**
 * toolgate with three tools: `build` (a write keyed by its tile `x`, slow
 * enough that two same-key writes would overlap if nothing kept them apart),
 * `look` (read-only) and `ship` (requires approval).
 */
export async function startToolgate (t: Tap): Promise<Toolgate> {
  const executor = await startExecutor(t)
  executor.on('build', async (call) => {
    await sleep(15)
    return { content: { built: call.arguments.x } }
  })
  const { app, logs } = await buildTestApp(t, {
    keysDoc: { keys: [{ key: KEY, tenant: 'frameworks', roles: ['orchestrator', 'admin'], name: 'framework-agent' }] },
    config: { host: '127.0.0.1' },
    tools: [
      tool('build', executor.url, { description: 'Builds on the tile x.', conflictKey: 'tile:{/x}' }),
      tool('look', executor.url, { description: 'Looks at the tile x.', readOnly: true }),
      tool('ship', executor.url, { description: 'Ships the order k.', requiresApproval: true })
    ]
  })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, executor, base, logs }
}

/** A run created with options (`POST /v1/runs`), and the MCP URL bound to it. */
export async function runWithOptions (tg: Toolgate, options: Record<string, unknown> = {}): Promise<{ runId: string, url: string }> {
  const run = await post(tg.app, '/v1/runs', options, AUTH)
  if (run.status !== 201) throw new Error(`run creation failed: ${JSON.stringify(run.body)}`)
  return { runId: run.body.runId, url: `${tg.base}/v1/runs/${run.body.runId as string}/mcp` }
}

/** The run as the API shows it. */
export async function runState (tg: Toolgate, runId: string): Promise<{ state: string, terminationReason?: string }> {
  return (await get(tg.app, `/v1/runs/${runId}`, AUTH)).body
}

/** Pairs of executor calls of `tool` with the same value of `key` whose times overlapped. */
export function sameKeyOverlaps (calls: readonly ExecutorCall[], toolName: string, key: string): number {
  const mine = calls.filter((c) => c.tool === toolName)
  let overlaps = 0
  for (let i = 0; i < mine.length; i++) {
    for (let j = i + 1; j < mine.length; j++) {
      const a = mine[i]!
      const b = mine[j]!
      if (a.arguments[key] !== b.arguments[key]) continue
      if (a.startedAt < (b.endedAt ?? Infinity) && b.startedAt < (a.endedAt ?? Infinity)) overlaps++
    }
  }
  return overlaps
}

/**
 * A person at the approvals inbox: approves every held call of the run as
 * it arrives, until stopped. Answers the tools it approved.
 */
export function approveFromInbox (tg: Toolgate, runId: string): { stop: () => Promise<string[]> } {
  const approved: string[] = []
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const entries = ((await get(tg.app, '/v1/approvals', AUTH)).body.approvals ?? []) as Array<{ runId: string, batchId: string, callId: string, tool: string }>
      for (const e of entries.filter((x) => x.runId === runId)) {
        const decided = await post(tg.app, `/v1/runs/${runId}/batches/${e.batchId}/approvals`, { decisions: [{ callId: e.callId, approve: true }] }, AUTH)
        if (decided.status === 200 || decided.status === 202) approved.push(e.tool)
      }
      await sleep(10)
    }
  })()
  return {
    stop: async () => {
      stopped = true
      await loop
      return approved
    }
  }
}

/** Whether a tool result's text says the run's loop protection stopped it. */
export const STOPPED = /terminated|no more tool calls run/
