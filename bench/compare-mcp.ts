/**
 * Two builds' `/mcp` against each other, paired: one `tools/call` at a
 * time through each build's toolgate to an upstream MCP server of its own,
 * what the `/mcp` row of the full bench measures, but steady enough to see
 * a change of a few percent.
 *
 *   node dist/bench/compare-mcp.js <distA> <distB> [--rounds 6] [--calls 1500] [--warmup 1500] [--pin] [--json]
 *
 * Each <dist> is a built tree with the project's node_modules reachable
 * from it (as for compare.js). Each build runs its own upstream (the SDK's
 * server, one tool that answers at once) and its own toolgate (with the
 * Node flags it ships with), each started from that build's bench/child.js. Rounds alternate which build goes
 * first; in each, a build answers `calls / 3` calls sent to its upstream
 * directly, then `calls` through its toolgate, one after another on one
 * session. The client is a few lines of JSON-RPC over undici, not the
 * SDK's client, whose own cost per call grows with a session's length. It
 * gives each build's p50, its p50 over the direct calls of the same round
 * (the added p50), and toolgate's CPU time per call (every thread of its
 * process), and B's CPU per call over A's for each round. With --pin
 * (Linux, taskset) both toolgates get core 1 and everything else core 0.
 */
import { realpathSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { request } from 'undici'
import type * as children from './children.js'
import type * as McpServers from './mcp-servers.js'
import type * as ToolgateBench from './toolgate.js'
import { type BenchChild, killAll, pin, trapSignals } from './children.js'
import { integerOption } from './options.js'
import { BENCH_KEY, TOOLGATE_NODE_FLAGS } from './settings.js'
import { median, percentile } from './stats.js'

export interface McpCompareOptions { rounds: number, calls: number, warmup: number, pin: boolean }

export interface McpBuildFigures {
  dist: string
  /** Per round, ms. */
  p50Ms: number[]
  /** p50 over the direct calls' p50 of the same round and build, ms. */
  addedP50Ms: number[]
  /** toolgate's CPU time per call (µs), per round. */
  cpuUsPerCall: number[]
}

export interface McpComparison {
  options: McpCompareOptions
  a: McpBuildFigures
  b: McpBuildFigures
  /** B's CPU per call over A's, per round. */
  cpuRatios: number[]
  medianCpuRatio: number
}

type ChildModule = typeof children
/** One call; rejects unless it answered a result without isError. */
export type Caller = () => Promise<void>

const ACCEPT = 'application/json, text/event-stream'
const PROTOCOL_VERSION = '2025-06-18'

/** A session on `url`: initialized, then a caller of `tool` with a new argument each time (no loop rule stops it). */
async function session (url: string, headers: Record<string, string>, tool: string): Promise<Caller> {
  const sent: Record<string, string> = { ...headers, accept: ACCEPT, 'content-type': 'application/json' }
  let id = 0
  const rpc = async (message: object): Promise<string> => {
    const res = await request(url, { method: 'POST', headers: sent, body: JSON.stringify({ jsonrpc: '2.0', ...message }) })
    const sid = res.headers['mcp-session-id']
    if (typeof sid === 'string') sent['mcp-session-id'] = sid
    const text = await res.body.text()
    if (res.statusCode >= 300) throw new Error(`${url} answered ${res.statusCode}: ${text.slice(0, 200)}`)
    return text
  }
  await rpc({ id: ++id, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'compare-mcp', version: '1' } } })
  sent['mcp-protocol-version'] = PROTOCOL_VERSION
  await rpc({ method: 'notifications/initialized' })
  let x = 0
  return async () => {
    const text = await rpc({ id: ++id, method: 'tools/call', params: { name: tool, arguments: { x: ++x } } })
    if (!text.includes('"result"') || text.includes('"isError":true')) throw new Error(`${url}: the call did not answer a result: ${text.slice(0, 200)}`)
  }
}

/** One build's processes: its upstream, its toolgate (a run created on it), and a session on each. */
export interface Side { upstream: BenchChild, toolgate: BenchChild, direct: Caller, through: Caller }

/** Starts the build in `dist`: its toolgate with the Node flags it ships with, and `nodeFlags` after them. */
export async function startSide (dist: string, nodeFlags: readonly string[] = []): Promise<Side> {
  const m = await import(pathToFileURL(resolve(dist, 'bench', 'children.js')).href) as ChildModule
  const { UPSTREAM_TOOL } = await import(pathToFileURL(resolve(dist, 'bench', 'mcp-servers.js')).href) as typeof McpServers
  const { IMPORTED_TOOL } = await import(pathToFileURL(resolve(dist, 'bench', 'toolgate.js')).href) as typeof ToolgateBench
  const upstream = await m.startChild('mcp-upstream', [], { startTimeoutMs: 60_000 })
  const toolgate = await m.startChild('toolgate-mcp', [upstream.url, 'warn'], { startTimeoutMs: 60_000, nodeFlags: [...TOOLGATE_NODE_FLAGS, ...nodeFlags] })
  const auth = { authorization: `Bearer ${BENCH_KEY}` }
  const created = await request(`${toolgate.url}/v1/runs`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0 } }) })
  const { runId } = await created.body.json() as { runId: string }
  return {
    upstream,
    toolgate,
    direct: await session(upstream.url, {}, UPSTREAM_TOOL),
    through: await session(`${toolgate.url}/v1/runs/${runId}/mcp`, auth, IMPORTED_TOOL)
  }
}

export async function timed (call: Caller, n: number): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await call()
    times.push(performance.now() - t0)
  }
  return times
}

export async function compareMcp (distA: string, distB: string, opts: McpCompareOptions, log: (line: string) => void): Promise<McpComparison> {
  trapSignals()
  const sides: Side[] = []
  try {
    for (const dist of [distA, distB]) sides.push(await startSide(dist))
    if (opts.pin) {
      pin(process.pid, '0')
      for (const s of sides) {
        pin(s.upstream.pid, '0')
        pin(s.toolgate.pid, '1')
      }
    }
    for (const s of sides) {
      await timed(s.direct, opts.warmup)
      await timed(s.through, opts.warmup)
    }
    const figures: McpBuildFigures[] = [distA, distB].map((dist) => ({ dist, p50Ms: [], addedP50Ms: [], cpuUsPerCall: [] }))
    for (let round = 0; round < opts.rounds; round++) {
      for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const s = sides[i]!
        const direct = percentile(await timed(s.direct, Math.max(1, Math.round(opts.calls / 3))), 50)
        const cpu0 = (await s.toolgate.cpu()).cpuUs
        const p50 = percentile(await timed(s.through, opts.calls), 50)
        const cpu = ((await s.toolgate.cpu()).cpuUs - cpu0) / opts.calls
        figures[i]!.p50Ms.push(p50)
        figures[i]!.addedP50Ms.push(p50 - direct)
        figures[i]!.cpuUsPerCall.push(cpu)
      }
      log(`round ${round + 1}/${opts.rounds}: CPU per call B / A ${(figures[1]!.cpuUsPerCall[round]! / figures[0]!.cpuUsPerCall[round]!).toFixed(3)}`)
    }
    const [a, b] = figures as [McpBuildFigures, McpBuildFigures]
    const cpuRatios = a.cpuUsPerCall.map((x, i) => b.cpuUsPerCall[i]! / x)
    return { options: opts, a, b, cpuRatios, medianCpuRatio: median(cpuRatios) }
  } finally {
    for (const s of sides) {
      await s.toolgate.stop()
      await s.upstream.stop()
    }
    await killAll()
  }
}

export function mcpComparisonMarkdown (c: McpComparison): string {
  const o = c.options
  const row = (name: string, f: McpBuildFigures): string =>
    `| ${name} | ${f.dist} | ${median(f.p50Ms).toFixed(3)} | ${median(f.addedP50Ms).toFixed(3)} | ${Math.round(median(f.cpuUsPerCall))} |`
  return [
    `One \`tools/call\` at a time through \`/mcp\`, ${o.rounds} rounds of ${o.calls} calls${o.pin ? ', toolgates pinned to core 1' : ''}; medians.`,
    '',
    '| build | dist | p50 ms | added p50 ms | CPU µs per call |',
    '| --- | --- | ---: | ---: | ---: |',
    row('A', c.a),
    row('B', c.b),
    '',
    `CPU per call, B / A: **${c.medianCpuRatio.toFixed(3)}** (rounds ${c.cpuRatios.map((r) => r.toFixed(2)).join(', ')})`
  ].join('\n')
}

async function main (): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      rounds: { type: 'string', default: '6' },
      calls: { type: 'string', default: '1500' },
      warmup: { type: 'string', default: '1500' },
      pin: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false }
    }
  })
  if (positionals.length !== 2) throw new TypeError('Usage: compare-mcp.js <distA> <distB> [--rounds N] [--calls N] [--warmup N] [--pin] [--json]')
  const opts: McpCompareOptions = {
    rounds: integerOption('rounds', values.rounds, 1),
    calls: integerOption('calls', values.calls, 1),
    warmup: integerOption('warmup', values.warmup, 0),
    pin: values.pin
  }
  const c = await compareMcp(positionals[0]!, positionals[1]!, opts, (line) => process.stderr.write(`compare-mcp: ${line}\n`))
  process.stdout.write((values.json ? JSON.stringify(c, null, 2) : mcpComparisonMarkdown(c)) + '\n')
}

// Node resolves symlinks in a module's URL but not in argv[1]: compare real paths, or a linked checkout would run nothing.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await main()
