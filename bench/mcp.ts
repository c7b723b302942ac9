/**
 * One MCP call through toolgate against the same call made directly with
 * the SDK client, to the same server: the filesystem server over stdio, in
 * its own process (its CPU is not counted). toolgate's side is a whole
 * one-call batch through the app (routing, preparation, scheduling, the
 * tools/call on its one connection, the answer), in process; the direct
 * side is `client.callTool`. Between the two, toolgate's MCP executor alone
 * (the imported tool's `send`, as the batch calls it): what the MCP side of
 * toolgate costs beyond the SDK, the rest of the batch being what any batch
 * costs. Rounds interleave the three; CPU µs per call.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { buildApp } from '../src/app.js'
import { defaultConfig } from '../src/config.js'
import { createLogger } from '../src/logger.js'
import { median } from './stats.js'

export interface McpCallCost {
  /** A one-call batch through the app. */
  toolgateUs: number
  /** toolgate's MCP executor alone: the imported tool's send. */
  executorUs: number
  /** The SDK client's callTool. */
  directUs: number
  /** toolgateUs / directUs. */
  ratio: number
  /** executorUs / directUs. */
  executorRatio: number
  calls: number
}

const require = createRequire(import.meta.url)

function cpuUs (): number {
  const u = process.cpuUsage()
  return u.user + u.system
}

export async function measureMcpCall (iterations: number, rounds: number): Promise<Omit<McpCallCost, 'ratio' | 'executorRatio'>> {
  const bin = join(dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist/index.js')
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-bench-mcp-'))
  const server = { command: process.execPath, args: [bin, dir], stderr: 'ignore' as const }
  const client = new Client({ name: 'bench', version: '1' })
  const app = await buildApp(defaultConfig({ logLevel: 'silent' }), { logger: createLogger('silent') })
  try {
    await client.connect(new StdioClientTransport(server))
    await app.services.mcp.startAll([{ name: 'files', transport: 'stdio', command: server.command, args: server.args, include: ['list_allowed_directories'] }])
    const run = await app.inject({ method: 'POST', url: '/v1/runs', payload: { limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0 } } })
    const runId = (run.json() as { runId: string }).runId
    const viaToolgate = async (): Promise<void> => {
      const res = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/batches`, payload: { calls: [{ id: 'c', name: 'files_list_allowed_directories', arguments: {} }] } })
      if ((res.json() as { results: Array<{ status: string }> }).results[0]!.status !== 'ok') throw new Error('the bench call failed')
    }
    const direct = async (): Promise<void> => {
      await client.callTool({ name: 'list_allowed_directories', arguments: {} })
    }
    const tool = app.services.tools.resolve('files_list_allowed_directories')
    const executor = tool?.executor.via
    if (tool == null || executor === undefined) throw new Error('the MCP tool was not imported')
    const options = { runId, batchId: 'bench', call: { id: 'c', arguments: {}, tool }, operationId: 'bench-operation' }
    const viaExecutor = async (): Promise<void> => {
      const answer = await executor.send(options)
      if (answer.kind !== 'tool_result') throw new Error(`the MCP executor answered ${answer.kind}`)
    }
    const tg: number[] = []
    const ex: number[] = []
    const dc: number[] = []
    // Round 0 warms the JIT and is not kept.
    for (let round = 0; round <= rounds; round++) {
      for (const [fn, out] of [[viaToolgate, tg], [viaExecutor, ex], [direct, dc]] as const) {
        const t0 = cpuUs()
        for (let i = 0; i < iterations; i++) await fn()
        if (round > 0) out.push((cpuUs() - t0) / iterations)
      }
    }
    return { toolgateUs: median(tg), executorUs: median(ex), directUs: median(dc), calls: iterations }
  } finally {
    await client.close().catch(() => {})
    await app.close()
    await rm(dir, { recursive: true, force: true })
  }
}
