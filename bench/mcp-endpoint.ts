/**
 * One MCP `tools/call` through toolgate's own MCP endpoint (`/mcp`, SPEC
 * section 16) against the same call sent directly to the upstream MCP
 * server, and through a plain MCP proxy (`mcp-proxy`) in front of it, in the
 * same run: latency (p50, p99 of calls one after another on one session)
 * and throughput (calls per second with `concurrency` sessions in a closed
 * loop). The upstream, the proxy and toolgate each run in their own process;
 * the load generator is the official SDK's client, here. Rounds interleave
 * the three targets, starting with a different one each round, and the added
 * latencies are taken within a round.
 *
 * toolgate's sessions are each bound to a run of their own (`/v1/runs/{id}/mcp`)
 * with exact-repeat limits off, and every call asks for another tile, so no
 * loop rule stops the bench's calls.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ownSignals } from '../src/mcp/request-signals.js'
import { type BenchChild, startChild } from './children.js'
import { UPSTREAM_TOOL } from './mcp-servers.js'
import { BENCH_KEY, type BenchSettings, TOOLGATE_NODE_FLAGS } from './settings.js'
import { median, percentile, rotate, sig } from './stats.js'
import { IMPORTED_TOOL } from './toolgate.js'

export type McpTargetName = 'direct' | 'proxy' | 'toolgate'
const NAMES: readonly McpTargetName[] = ['direct', 'proxy', 'toolgate']
type Per<T> = Record<McpTargetName, T>

export interface McpEndpointCost {
  /** Sessions in the throughput loop. */
  concurrency: number
  /** Calls one after another per round, for the latencies. */
  callsPerRound: number
  p50Ms: Per<number>
  p99Ms: Per<number>
  /** Over direct, paired by round. */
  addedP50Ms: { proxy: number, toolgate: number }
  addedP99Ms: { proxy: number, toolgate: number }
  callsPerSec: Per<number>
  /**
   * CPU time (user + system) of the target's own process per call, over the
   * calls one after another: the upstream's for direct, the proxy's, and
   * toolgate's (the upstream's share of those calls not counted). Steadier
   * than the latencies on a loaded machine.
   */
  cpuUsPerCall: Per<number>
  /** toolgate over the proxy, paired by round. */
  toolgateOverProxy: number
  /** Calls that answered no result, or one with isError, by target. */
  errors: Per<number>
  /** Issue 41's: added p50 under this over direct, throughput at least the proxy's. */
  targetAddedP50Ms: number
}

interface Sessions { tool: string, clients: Client[], close: () => Promise<void> }

async function session (url: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' })
  // Each request with a signal of its own, as toolgate's own client sends them: with the session's signal on every
  // request, the SDK's client gathers an abort listener per call and counts them all again on each (request-signals.ts),
  // so the load generator itself would slow as the session grows.
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch: ownSignals(fetch) }))
  return client
}

/** `n` sessions on a target; toolgate's each on a run of its own. */
async function sessionsOn (name: McpTargetName, url: string, n: number): Promise<Sessions> {
  const clients: Client[] = []
  if (name === 'toolgate') {
    const origin = new URL(url).origin
    const auth = { authorization: `Bearer ${BENCH_KEY}` }
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${origin}/v1/runs`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0 } }) })
      const { runId } = await res.json() as { runId: string }
      clients.push(await session(`${origin}/v1/runs/${runId}/mcp`, auth))
    }
  } else {
    for (let i = 0; i < n; i++) clients.push(await session(url, {}))
  }
  return { tool: name === 'toolgate' ? IMPORTED_TOOL : UPSTREAM_TOOL, clients, close: async () => { await Promise.allSettled(clients.map((c) => c.close())) } }
}

let tile = 0
/** One call; false when it did not answer a result without isError. */
async function callOnce (client: Client, tool: string): Promise<boolean> {
  try {
    const result = await client.callTool({ name: tool, arguments: { x: ++tile } })
    return result.isError !== true
  } catch {
    return false
  }
}

/** `toolgateFlags`: node flags of toolgate's process (`--cpu-prof`, say). */
export async function measureMcpEndpoint (s: BenchSettings['mcpEndpoint'], logLevel: string, log: (line: string) => void, toolgateFlags: string[] = []): Promise<McpEndpointCost> {
  const children: BenchChild[] = []
  const open: Sessions[] = []
  try {
    const upstream = await startChild('mcp-upstream', [], { startTimeoutMs: 60_000 })
    children.push(upstream)
    // toolgate runs with the Node flags it ships with (`npm start`, the container), and the proxy with the same:
    // the comparison is of the code, not of the tuning (as the relay and the floor are run).
    const [proxy, toolgate] = await Promise.all([
      startChild('mcp-proxy', [upstream.url], { startTimeoutMs: 60_000, nodeFlags: [...TOOLGATE_NODE_FLAGS] }),
      startChild('toolgate-mcp', [upstream.url, logLevel], { startTimeoutMs: 60_000, nodeFlags: [...TOOLGATE_NODE_FLAGS, ...toolgateFlags] })
    ])
    children.push(proxy, toolgate)
    const urls: Per<string> = { direct: upstream.url, proxy: proxy.url, toolgate: `${toolgate.url}/mcp` }
    const processes: Per<BenchChild> = { direct: upstream, proxy, toolgate }
    const targets = {} as Per<Sessions>
    for (const name of NAMES) {
      targets[name] = await sessionsOn(name, urls[name], s.concurrency)
      open.push(targets[name])
    }
    const errors: Per<number> = { direct: 0, proxy: 0, toolgate: 0 }
    const p50 = { direct: [], proxy: [], toolgate: [] } as Per<number[]>
    const p99 = { direct: [], proxy: [], toolgate: [] } as Per<number[]>
    const rate = { direct: [], proxy: [], toolgate: [] } as Per<number[]>
    const cpu = { direct: [], proxy: [], toolgate: [] } as Per<number[]>
    // Round 0 warms the JIT and the sessions and is not kept.
    for (let round = 0; round <= s.rounds; round++) {
      if (round > 0) log(`MCP /mcp rows, round ${round} of ${s.rounds}`)
      for (const name of rotate(NAMES, round)) {
        const { clients, tool } = targets[name]
        const times: number[] = []
        const cpu0 = (await processes[name].cpu()).cpuUs
        for (let i = 0; i < s.calls; i++) {
          const t0 = performance.now()
          if (!(await callOnce(clients[0]!, tool))) errors[name]++
          times.push(performance.now() - t0)
        }
        const cpuPerCall = ((await processes[name].cpu()).cpuUs - cpu0) / s.calls
        let done = 0
        const end = performance.now() + s.windowMs
        const t0 = performance.now()
        await Promise.all(clients.map(async (c) => {
          while (performance.now() < end) {
            if (await callOnce(c, tool)) done++
            else errors[name]++
          }
        }))
        const elapsed = (performance.now() - t0) / 1000
        if (round === 0) continue
        p50[name].push(percentile(times, 50))
        p99[name].push(percentile(times, 99))
        rate[name].push(done / elapsed)
        cpu[name].push(cpuPerCall)
      }
    }
    const added = (xs: Per<number[]>, name: 'proxy' | 'toolgate'): number => sig(median(xs[name].map((x, i) => x - xs.direct[i]!)))
    const per = (xs: Per<number[]>): Per<number> => ({ direct: sig(median(xs.direct)), proxy: sig(median(xs.proxy)), toolgate: sig(median(xs.toolgate)) })
    return {
      concurrency: s.concurrency,
      callsPerRound: s.calls,
      p50Ms: per(p50),
      p99Ms: per(p99),
      addedP50Ms: { proxy: added(p50, 'proxy'), toolgate: added(p50, 'toolgate') },
      addedP99Ms: { proxy: added(p99, 'proxy'), toolgate: added(p99, 'toolgate') },
      callsPerSec: per(rate),
      cpuUsPerCall: per(cpu),
      toolgateOverProxy: sig(median(rate.toolgate.map((x, i) => x / rate.proxy[i]!))),
      errors,
      targetAddedP50Ms: 1
    }
  } finally {
    await Promise.allSettled(open.map((o) => o.close()))
    await Promise.allSettled(children.map((c) => c.stop()))
  }
}
