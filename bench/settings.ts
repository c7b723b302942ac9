/** How long and how much each measure runs: the full bench, and the smoke mode the tests run. */

export interface BenchSettings {
  /** Throughput rounds (each target measured once per cell per round, targets interleaved). */
  rounds: number
  concurrency: readonly number[]
  batchSizes: readonly number[]
  /** Each target, once, before anything is measured. */
  globalWarmupMs: number
  warmupMs: number
  windowMs: number
  latency: { rounds: number, warmupMs: number, windowMs: number, batchesPerSec: Readonly<Record<number, number>>, runs: number }
  makespan: { rounds: number, batches: number, maxMs: number, seed: number }
  safety: { rounds: number, batches: number, size: number, keys: number, maxMs: number, seed: number }
  prep: { rounds: number, iterations: number }
  /** One MCP call through toolgate against the SDK's own call (bench/mcp.ts). */
  mcp: { rounds: number, iterations: number }
  /** One tools/call through toolgate's /mcp, direct to the upstream and through a plain proxy (bench/mcp-endpoint.ts). */
  mcpEndpoint: { rounds: number, calls: number, windowMs: number, concurrency: number }
  /** A write batch with its write-ahead record and a tenant-scoped key, each against its reference (bench/store-paths.ts). */
  storePaths: { rounds: number, batches: number }
  memory: { runs: number }
  profile: { warmupMs: number, windowMs: number, concurrency: number }
}

export const FULL: BenchSettings = {
  rounds: 9,
  concurrency: [10, 50],
  batchSizes: [10, 1],
  globalWarmupMs: 1500,
  warmupMs: 200,
  windowMs: 700,
  // About a quarter of what the relay sustains here: loaded, never saturated.
  latency: { rounds: 4, warmupMs: 200, windowMs: 1200, batchesPerSec: { 1: 500, 10: 100 }, runs: 32 },
  makespan: { rounds: 3, batches: 16, maxMs: 40, seed: 1 },
  // Writes spread over 16 keys: a same-key pair in about a third of the batches.
  safety: { rounds: 3, batches: 24, size: 16, keys: 16, maxMs: 40, seed: 2 },
  prep: { rounds: 5, iterations: 20_000 },
  mcp: { rounds: 3, iterations: 300 },
  mcpEndpoint: { rounds: 5, calls: 300, windowMs: 1500, concurrency: 8 },
  storePaths: { rounds: 5, batches: 300 },
  memory: { runs: 100_000 },
  profile: { warmupMs: 1500, windowMs: 6000, concurrency: 50 }
}

export const SMOKE: BenchSettings = {
  rounds: 1,
  concurrency: [2, 4],
  batchSizes: [10, 1],
  globalWarmupMs: 100,
  warmupMs: 20,
  windowMs: 150,
  latency: { rounds: 1, warmupMs: 20, windowMs: 100, batchesPerSec: { 1: 100, 10: 50 }, runs: 4 },
  makespan: { rounds: 1, batches: 3, maxMs: 4, seed: 1 },
  safety: { rounds: 1, batches: 3, size: 8, keys: 2, maxMs: 4, seed: 2 },
  prep: { rounds: 1, iterations: 200 },
  mcp: { rounds: 1, iterations: 20 },
  mcpEndpoint: { rounds: 1, calls: 10, windowMs: 100, concurrency: 2 },
  storePaths: { rounds: 1, batches: 10 },
  memory: { runs: 10_000 },
  profile: { warmupMs: 50, windowMs: 200, concurrency: 2 }
}

/**
 * Node flags toolgate runs with, as package.json's start script and the
 * Dockerfile's CMD give them (a test holds the three together).
 */
export const TOOLGATE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64']

/** The orchestrator key the load generator sends toolgate. */
export const BENCH_KEY = 'bench-orchestrator-key'

/** The targets of the issues (#8; #28 for the floor and the Redis store). */
export const TARGETS = {
  toolgateOverRelay: { 10: 0.85, 1: 0.80 } as Readonly<Record<number, number>>,
  /** toolgate on the memory store over the floor. */
  toolgateOverFloor: { 10: 0.95, 1: 0.90 } as Readonly<Record<number, number>>,
  /** toolgate on Redis over toolgate on memory, in the same round. */
  redisOverMemory: { 10: 0.85, 1: 0.70 } as Readonly<Record<number, number>>,
  /** Redis round trips per batch of reads (the round-trip test holds them load-independently). */
  redisRoundTrips: { 10: 3, 1: 2 } as Readonly<Record<number, number>>,
  redisAddedP50Ms: 1,
  redisAddedP99Ms: 3,
  addedP50Ms: 1,
  makespanOverBound: 1.05,
  safeOverParallel: 1.15,
  prepUs: 10,
  bytesPerRun: 2048
}
