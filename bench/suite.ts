/**
 * The whole bench: start the executor, the relay, the floor and toolgate in their own
 * processes, measure every figure against its reference in the same run
 * (targets interleaved round by round), stop everything, and answer the
 * results. run.ts is the command line around it; the smoke test calls it.
 */
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { type BenchChild, killAll, runScript, startChild, trapSignals } from './children.js'
import { type Target, directTarget, serviceTarget } from './clients.js'
import type { MemoryAnswer } from './memory-child.js'
import { measurePreparation } from './prepare.js'
import { measureMcpCall } from './mcp.js'
import { measureMcpEndpoint } from './mcp-endpoint.js'
import { type BenchResults, PLACEMENT } from './results.js'
import { measureMakespan, measureSafety } from './scheduling.js'
import { type BenchSettings, FULL, SMOKE, TARGETS, TOOLGATE_NODE_FLAGS } from './settings.js'
import { sig } from './stats.js'
import { measureStorePaths } from './store-paths.js'
import { openBenchRedis } from './redis.js'
import { TARGET_NAMES, type Targets, measureLatency, measureThroughput, warmUp } from './throughput.js'

export interface BenchOptions {
  smoke?: boolean
  /** Overrides the number of throughput and latency rounds. */
  rounds?: number
  /** toolgate's LOG_LEVEL; default info, as shipped. */
  logLevel?: string
  /** The project root (for examples/tools.json). */
  root: string
  /** Progress lines (stderr for the command line). */
  log?: (line: string) => void
}

export async function runBench (opts: BenchOptions): Promise<BenchResults> {
  const base = opts.smoke === true ? SMOKE : FULL
  const s: BenchSettings = opts.rounds === undefined ? base : { ...base, rounds: opts.rounds, latency: { ...base.latency, rounds: opts.rounds } }
  const started = Date.now()
  const log = (line: string): void => opts.log?.(`${((Date.now() - started) / 1000).toFixed(1)} s: ${line}`)
  const loadStart = loadavg()
  trapSignals()

  const children: BenchChild[] = []
  const targets: Target[] = []
  const redis = await openBenchRedis()
  const onRedis = 'url' in redis ? redis : null
  try {
    if (onRedis === null) log(`no Redis for the Redis store's rows (${'unavailable' in redis ? redis.unavailable : ''}): the memory store only`)
    await onRedis?.flush()
    log(`starting the executor, the relay, the floor and toolgate${onRedis === null ? '' : ' on each store'} (one process each)`)
    const startTimeoutMs = opts.smoke === true ? 120_000 : 30_000
    const executor = await startChild('executor', [], { startTimeoutMs })
    children.push(executor)
    // The relay and the floor get toolgate's Node flags too: the ratio is of the code, not of the tuning.
    const [relay, floor, toolgate, onStore] = await Promise.all([
      startChild('relay', [executor.url], { startTimeoutMs, nodeFlags: [...TOOLGATE_NODE_FLAGS] }),
      startChild('floor', [executor.url], { startTimeoutMs, nodeFlags: [...TOOLGATE_NODE_FLAGS] }),
      startChild('toolgate', [executor.url, opts.logLevel ?? 'info', 'memory'], { startTimeoutMs, nodeFlags: [...TOOLGATE_NODE_FLAGS] }),
      onRedis === null ? Promise.resolve(undefined) : startChild('toolgate', [executor.url, opts.logLevel ?? 'info', onRedis.url], { startTimeoutMs, nodeFlags: [...TOOLGATE_NODE_FLAGS] })
    ])
    children.push(relay, floor, toolgate, ...(onStore === undefined ? [] : [onStore]))

    const direct = directTarget(executor.url)
    targets.push(direct)
    const services = new Map(s.concurrency.map((c) => {
      const t: Record<'relay' | 'floor' | 'toolgate' | 'redis', Target> = {
        relay: serviceTarget('relay', relay.url, c),
        floor: serviceTarget('floor', floor.url, c),
        toolgate: serviceTarget('toolgate', toolgate.url, c),
        redis: serviceTarget('redis', onStore?.url ?? toolgate.url, c)
      }
      targets.push(t.relay, t.floor, t.toolgate, t.redis)
      return [c, t]
    }))
    const all: Targets = {
      names: TARGET_NAMES.filter((name) => name !== 'redis' || onStore !== undefined),
      at: (name, c) => (name === 'direct' ? direct : services.get(c)![name]),
      process: (name) => (name === 'relay' ? relay : name === 'floor' ? floor : name === 'toolgate' ? toolgate : name === 'redis' ? onStore : undefined),
      ...(onRedis === null ? {} : { serverCpu: () => onRedis.serverCpuUs() })
    }

    log('warming up every target')
    await warmUp(all, s)
    const throughput = await measureThroughput(all, s, log)
    const latency = await measureLatency(all, s, log)
    const tg = all.at('toolgate', Math.max(...s.concurrency))
    const makespan = await measureMakespan(tg, direct, executor.url, s, log)
    const safety = await measureSafety(tg, executor.url, s, log)
    // One connection each: a batch at a time, so the figures are the paths' own.
    const onePath = (name: 'toolgate' | 'redis', url: string): Target => {
      const t = serviceTarget(name, url, 1)
      targets.push(t)
      return t
    }
    const storePaths = await measureStorePaths([
      { store: 'memory', target: onePath('toolgate', toolgate.url), service: toolgate },
      ...(onStore === undefined ? [] : [{ store: 'redis' as const, target: onePath('redis', onStore.url), service: onStore }])
    ], s.storePaths, log)

    for (const t of targets.splice(0)) await t.close()
    for (const c of children.splice(0)) await c.stop()

    log('preparation CPU (in process)')
    const prep = await measurePreparation(join(opts.root, 'examples', 'tools.json'), s.prep.iterations, s.prep.rounds)
    log('one MCP call through toolgate against the SDK client (in process, the filesystem server over stdio)')
    const mcp = await measureMcpCall(s.mcp.iterations, s.mcp.rounds)
    log('one tools/call through toolgate\'s /mcp, directly to the upstream MCP server and through mcp-proxy (each in its own process)')
    const mcpEndpoint = await measureMcpEndpoint(s.mcpEndpoint, opts.logLevel ?? 'info', log)
    log(`memory per idle run (${s.memory.runs} runs, fresh processes)`)
    const [reference, own] = await Promise.all(['reference', 'toolgate'].map((mode) =>
      runScript('memory-child', [mode, String(s.memory.runs)], ['--expose-gc']) as Promise<MemoryAnswer>))
    if (reference === undefined || own === undefined) throw new Error('unreachable')

    return {
      meta: {
        date: new Date(started).toISOString(),
        smoke: opts.smoke === true,
        node: process.version,
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        loadavgStart: loadStart.map((x) => sig(x, 2)),
        loadavgEnd: loadavg().map((x) => sig(x, 2)),
        durationS: Math.round((Date.now() - started) / 1000),
        toolgateLogLevel: opts.logLevel ?? 'info',
        placement: PLACEMENT,
        settings: s,
        redis: onRedis === null ? { unavailable: 'unavailable' in redis ? redis.unavailable : '' } : { url: withoutCredentials(onRedis.url) }
      },
      throughput,
      latency,
      makespan,
      safety,
      preparation: prep.map((c) => ({ ...c, toolgateUs: sig(c.toolgateUs), referenceUs: sig(c.referenceUs), ratio: sig(c.toolgateUs / c.referenceUs), target: TARGETS.prepUs })),
      mcp: { ...mcp, toolgateUs: sig(mcp.toolgateUs), executorUs: sig(mcp.executorUs), directUs: sig(mcp.directUs), ratio: sig(mcp.toolgateUs / mcp.directUs), executorRatio: sig(mcp.executorUs / mcp.directUs) },
      mcpEndpoint,
      storePaths,
      memory: {
        runs: own.runs,
        method: 'RunService.create into a MemoryStore, in a fresh process (--expose-gc), no HTTP',
        toolgateBytesPerRun: Math.round(own.rssBytesPerRun),
        toolgateHeapBytesPerRun: Math.round(own.heapBytesPerRun),
        referenceBytesPerRun: Math.round(reference.rssBytesPerRun),
        ratio: sig(own.rssBytesPerRun / reference.rssBytesPerRun),
        target: TARGETS.bytesPerRun
      }
    }
  } finally {
    await Promise.allSettled(targets.map((t) => t.close()))
    await Promise.allSettled(children.map((c) => c.stop()))
    await killAll()
    if (onRedis !== null) await onRedis.flush().catch(() => {}).finally(() => onRedis.close())
  }
}

function withoutCredentials (url: string): string {
  const u = new URL(url)
  u.username = ''
  u.password = ''
  return u.toString()
}
