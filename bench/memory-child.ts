/**
 * Memory per idle run, in a fresh process started with --expose-gc:
 * `memory-child.js toolgate <n>` creates n runs through toolgate's RunService
 * and MemoryStore (what POST /v1/runs does, without HTTP);
 * `memory-child.js reference <n>` holds n run ids with a minimal record in a
 * Map, the floor of remembering that a run exists. Answers the growth of RSS
 * and of the heap, per run, over IPC.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { defaultConfig } from '../src/config.js'
import { RunService } from '../src/runs/service.js'
import { MemoryStore } from '../src/store/memory.js'

/** What the child answers. */
export interface MemoryAnswer { runs: number, rssBytesPerRun: number, heapBytesPerRun: number }

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('memory-child needs --expose-gc')

async function settled (): Promise<NodeJS.MemoryUsage> {
  for (let i = 0; i < 3; i++) {
    gc!()
    await sleep(20)
  }
  return process.memoryUsage()
}

const mode = process.argv[2]
const n = Number(process.argv[3])
if (!Number.isInteger(n) || n < 1) throw new Error(`Expected a run count, got ${String(process.argv[3])}`)

let hold: unknown
if (mode === 'toolgate') {
  const config = defaultConfig()
  const runTtlMs = config.runTtlSeconds * 1000
  // Room for every run, so nothing is evicted while we count.
  const store = new MemoryStore({ runTtlMs, maxRuns: Math.max(config.maxRuns, n + 1), receiptRetentionMs: config.receiptRetentionSeconds * 1000, maxReceipts: config.maxReceipts })
  const runs = new RunService({ store, runTtlMs, maxConcurrentTools: config.maxConcurrentTools })
  await runs.create('warm', {})
  hold = store
  const before = await settled()
  for (let i = 0; i < n; i++) await runs.create('bench', {})
  const after = await settled()
  if ((await store.countRuns()).total !== n + 1) throw new Error('the store did not keep every run')
  answer(before, after)
} else if (mode === 'reference') {
  const map = new Map<string, { runId: string, tenant: string, state: string, createdAt: number }>()
  hold = map
  const before = await settled()
  for (let i = 0; i < n; i++) {
    const runId = `run_${randomUUID()}`
    map.set(runId, { runId, tenant: 'bench', state: 'active', createdAt: Date.now() })
  }
  const after = await settled()
  answer(before, after)
} else {
  throw new Error(`unknown memory-child mode ${JSON.stringify(mode)}`)
}

function answer (before: NodeJS.MemoryUsage, after: NodeJS.MemoryUsage): void {
  const reply: MemoryAnswer = { runs: n, rssBytesPerRun: (after.rss - before.rss) / n, heapBytesPerRun: (after.heapUsed - before.heapUsed) / n }
  process.send!(reply, () => {
    if (hold === null) process.exitCode = 1
    process.exit(0)
  })
}
