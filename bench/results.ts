/** The shape of bench/results.json. Every figure is a median over rounds unless it says otherwise. */
import type { McpEndpointCost } from './mcp-endpoint.js'
import type { BenchSettings } from './settings.js'
import type { StorePathCost } from './store-paths.js'

export const PLACEMENT = 'Five processes on 127.0.0.1, none pinned: the load generator (undici pools, and the in-process ' +
  'preparation loop), the executor, the relay, the floor and toolgate. Only the service under test is loaded at any moment (the ' +
  'others idle), so each measurement is three busy processes on the cores the OS gives them; direct is two. For batches the load ' +
  'generator sends one request per batch and stays light (loadgenCores); direct makes it do the per-call work instead. ' +
  'The relay, the floor and toolgate run with the same Node flags (toolgate\'s: a 64 MiB young generation).'

type PerTarget = { direct: number, relay: number, toolgate: number }
type PerService = { relay: number, floor: number, toolgate: number }

/** toolgate on the Redis store (a database of its own, flushed before and after), in the same rounds as the rest. */
export interface RedisThroughput {
  callsPerSec: number
  /** toolgate on Redis over toolgate on memory, paired by round; the lowest and highest round beside it. */
  overMemory: number
  overMemoryRounds: [number, number]
  overFloor: number
  cpuUsPerCall: number
  loopBusy: number
  /** Counted by the store's client wrapper. */
  roundTripsPerBatch: number
  commandsPerBatch: number
  /** The Redis server's CPU time per batch (INFO cpu over the window: every client of that server counts). */
  serverCpuUsPerBatch: number
  target: number | null
  roundTripsTarget: number | null
}

export interface RedisLatency {
  p50Ms: number
  p99Ms: number
  /** toolgate on Redis minus the relay, paired by round. */
  addedP50Ms: number
  addedP99Ms: number
  targetP50Ms: number
  targetP99Ms: number
}

export interface ThroughputCell {
  batchSize: number
  /** Batches in flight at once (connections to the service). */
  concurrency: number
  callsPerSec: PerTarget & { floor: number }
  relayOverDirect: number
  /** What any implementation of the SPEC keeps of the relay's throughput: the floor (bench/floor.ts) over the relay. */
  floorOverRelay: number
  /** toolgate over the floor: what toolgate's own design costs beyond the SPEC's mandatory work. */
  toolgateOverFloor: number
  toolgateOverRelay: number
  /** The lowest and highest toolgate / relay of a single round: how far the machine moved it. */
  toolgateOverRelayRounds: [number, number]
  toolgateOverDirect: number
  /** CPU time the service process spent per call (µs). */
  cpuUsPerCall: PerService
  cpuToolgateOverRelay: number
  /**
   * Share of the window each service's event loop was busy. Near 1 for both:
   * each is bound by its own main thread, so toolgate / relay follows their
   * CPU per call.
   */
  loopBusy: PerService
  /** Highest CPU use of the load generator in a window, in cores. */
  loadgenCores: number
  errors: number
  /** Target for toolgateOverRelay, or null. */
  target: number | null
  /** Target for toolgateOverFloor (memory store), or null. */
  floorTarget: number | null
  /** Absent when no Redis answered. */
  redis?: RedisThroughput
}

export interface LatencyCell {
  batchSize: number
  batchesPerSec: number
  p50Ms: PerTarget
  p99Ms: PerTarget
  /** toolgate minus relay, paired by round. */
  addedP50Ms: number
  addedP99Ms: number
  errors: number
  /** Batches not sent because every run was busy. */
  dropped: number
  target: number
  /** Absent when no Redis answered. */
  redis?: RedisLatency
}

export interface BenchResults {
  meta: {
    date: string
    smoke: boolean
    node: string
    cpus: number
    cpuModel: string
    loadavgStart: number[]
    loadavgEnd: number[]
    durationS: number
    toolgateLogLevel: string
    placement: string
    settings: BenchSettings
    /** The Redis store measured (its URL without credentials), or why it was not. */
    redis: { url: string } | { unavailable: string }
  }
  throughput: ThroughputCell[]
  latency: LatencyCell[]
  makespan: {
    batches: number
    /** Σ measured batch latency / Σ lower bound the constraints allow. */
    measuredOverBound: number
    /** The scheduling rule itself, with no overhead, over the bound. */
    ruleOverBound: number
    /** What toolgate's overhead adds to its rule. */
    measuredOverRule: number
    worstBatch: number
    executorOverheadMs: number
    /** Same-key overlaps the executor saw under toolgate (must be 0). */
    overlaps: number
    target: number
  }
  safety: {
    batches: number
    callsPerBatch: number
    /** How many distinct conflict keys the writes draw from. */
    keys: number
    safeOverParallel: number
    /** The least any schedule keeping same-key writes apart could reach on these batches, with no overhead. */
    floorSafeOverParallel: number
    overlapsParallel: number
    keyedWritesParallel: number
    overlapsToolgate: number
    target: number
  }
  preparation: Array<{ name: string, toolgateUs: number, referenceUs: number, ratio: number, target: number }>
  /** CPU of this process per call: a one-call batch to an MCP tool through toolgate, and the SDK's callTool to the same server. */
  mcp: { toolgateUs: number, executorUs: number, directUs: number, ratio: number, executorRatio: number, calls: number }
  /** One tools/call through toolgate's /mcp, directly to the upstream MCP server and through a plain proxy, over HTTP, each in its own process. */
  mcpEndpoint: McpEndpointCost
  /** A write batch with its write-ahead record against the same batch of reads; a tenant-scoped conflict key against a run-scoped one; on each store. */
  storePaths: StorePathCost
  memory: {
    runs: number
    method: string
    toolgateBytesPerRun: number
    toolgateHeapBytesPerRun: number
    referenceBytesPerRun: number
    ratio: number
    target: number
  }
}
