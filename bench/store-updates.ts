/**
 * The Redis store's run updates alone, two builds paired: per 1-call batch,
 * the two updates a batch of reads makes (take the lease and admit, then
 * store the answer and release), driven straight at each build's
 * RedisStore over 10 runs whose records carry what a batch leaves in them.
 * Each round runs every build in a fresh process (in turn, the order
 * alternating), warms it, then measures `--batches` batches, 10 at a time:
 * the process's CPU per batch and the bytes it allocated per batch (the
 * heap's growth between the collections of the window, from V8's
 * GCProfiler, plus the growth since the last one), how many collections
 * ran, and the server's time per EVALSHA over the window (INFO
 * commandstats: every client of the server counted).
 *
 *   npm run build && node dist/bench/store-updates.js <distA> <distB> [--rounds 6] [--batches 1500]
 *
 * Redis: TOOLGATE_BENCH_REDIS (default database 5 on 127.0.0.1); each
 * process writes under a prefix of its own and deletes it after.
 */
import { fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { GCProfiler, getHeapStatistics } from 'node:v8'
import { median } from './stats.js'

const REDIS = process.env.TOOLGATE_BENCH_REDIS ?? 'redis://127.0.0.1:6379/5'
const RUNS = 10

interface Figures { cpuUsPerBatch: number, bytesPerBatch: number, collections: number, serverUsPerEval: number }

async function evalStats (admin: { info: (section: string) => Promise<string> }): Promise<{ calls: number, usec: number }> {
  const line = (await admin.info('commandstats')).split('\n').find((l) => l.startsWith('cmdstat_evalsha:'))
  const field = (k: string): number => Number(new RegExp(`${k}=(\\d+)`).exec(line ?? '')?.[1] ?? 0)
  return { calls: field('calls'), usec: field('usec') }
}

async function measure (dist: string, batches: number): Promise<Figures> {
  const load = async (path: string): Promise<any> => import(pathToFileURL(resolve(dist, path)).href)
  const { RedisStore } = await load('src/store/redis.js')
  const { newRunRecord } = await load('src/runs/record.js')
  const { resolveRunOptions } = await load('src/runs/options.js')
  const { emptyStats } = await load('src/runs/stats.js')
  const prefix = `toolgate-bench:${randomUUID()}:`
  const store = new RedisStore({ url: REDIS, prefix, runTtlMs: 600_000, maxRuns: 1000, receiptRetentionMs: 1000 })
  const ids = Array.from({ length: RUNS }, (_, i) => `run_${i}`)
  for (const id of ids) {
    const run = newRunRecord(id, 'bench', resolveRunOptions({ metadata: { team: 'bench' } }, 8), Date.now())
    run.stats = emptyStats()
    await store.createRun(run)
  }
  let n = 0
  const batch = async (runId: string): Promise<void> => {
    const batchId = `batch_${++n}`
    await store.updateRunWithBatchId(runId, batchId, (run: any, entry: any) => {
      entry.requestHash = `hash_${batchId}`
      run.inFlight = { batchId, owner: 'bench', leaseExpiresAt: Date.now() + 30_000 }
      run.admitted = { batchId, repeat: { ...run.repeat }, toolCalls: run.counters.toolCalls, loops: run.loops }
      run.counters.turns++
      run.counters.toolCalls++
      run.repeat = { fingerprint: `fp_${n % 7}`, count: 1, advised: false }
    })
    await store.completeBatch(runId, 'bench', (run: any) => {
      run.stats.epochs++
      run.stats.largestEpoch = 1
      run.stats.callsByStatus.ok = (run.stats.callsByStatus.ok ?? 0) + 1
      run.stats.toolTimeMs += 1
      run.stats.wallTimeMs += 2
      return { batchId, requestHash: `hash_${batchId}`, responseJson: '{"results":[{"id":"c0","status":"ok","result":{"n":1}}]}', completedAt: Date.now() }
    })
  }
  const rounds = async (count: number): Promise<void> => {
    for (let i = 0; i < count / RUNS; i++) await Promise.all(ids.map(batch))
  }
  await rounds(Math.max(1000, batches))
  const { Redis } = await import('ioredis')
  const admin = new Redis(REDIS)
  const evalsBefore = await evalStats(admin)
  const profiler = new GCProfiler()
  profiler.start()
  let used = getHeapStatistics().used_heap_size
  const cpuBefore = process.cpuUsage()
  await rounds(batches)
  const cpu = process.cpuUsage(cpuBefore)
  const heapAfter = getHeapStatistics().used_heap_size
  const { statistics } = profiler.stop() as { statistics: Array<{ beforeGC: { heapStatistics: { usedHeapSize: number } }, afterGC: { heapStatistics: { usedHeapSize: number } } }> }
  let allocated = 0
  for (const gc of statistics) {
    allocated += gc.beforeGC.heapStatistics.usedHeapSize - used
    used = gc.afterGC.heapStatistics.usedHeapSize
  }
  allocated += heapAfter - used
  const collections = statistics.length
  const evalsAfter = await evalStats(admin)
  await store.close()
  const keys = await admin.keys(`${prefix}*`)
  for (let i = 0; i < keys.length; i += 500) await admin.del(...keys.slice(i, i + 500))
  admin.disconnect()
  return { cpuUsPerBatch: (cpu.user + cpu.system) / batches, bytesPerBatch: allocated / batches, collections, serverUsPerEval: (evalsAfter.usec - evalsBefore.usec) / Math.max(1, evalsAfter.calls - evalsBefore.calls) }
}

if (process.argv[2] === '--child') {
  const figures = await measure(process.argv[3]!, Number(process.argv[4]))
  process.send!(figures)
  process.disconnect()
} else {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '6' }, batches: { type: 'string', default: '1500' } } })
  const [a, b] = positionals
  if (a === undefined || b === undefined) throw new TypeError('Expected two built trees: store-updates.js <distA> <distB>')
  const batches = Number(values.batches)
  const run = (dist: string): Promise<Figures> => new Promise((resolve, reject) => {
    const proc = fork(fileURLToPath(import.meta.url), ['--child', dist, String(batches)], { execArgv: [] })
    proc.once('message', (m) => resolve(m as Figures))
    proc.once('exit', (code) => { if (code !== 0) reject(new Error(`child exited with ${String(code)}`)) })
  })
  const cpuRatios: number[] = []
  const byteRatios: number[] = []
  for (let r = 0; r < Number(values.rounds); r++) {
    const order = r % 2 === 0 ? [a, b] : [b, a]
    const got = new Map<string, Figures>()
    for (const dist of order) got.set(dist, await run(dist))
    const fa = got.get(a)!
    const fb = got.get(b)!
    cpuRatios.push(fb.cpuUsPerBatch / fa.cpuUsPerBatch)
    byteRatios.push(fb.bytesPerBatch / fa.bytesPerBatch)
    const show = (f: Figures): string => `${f.cpuUsPerBatch.toFixed(0)} µs, ${(f.bytesPerBatch / 1024).toFixed(1)} KB (${f.collections} collections), server ${f.serverUsPerEval.toFixed(1)} µs per EVALSHA`
    console.log(`round ${r + 1}: A ${show(fa)} | B ${show(fb)} | B/A cpu ${cpuRatios.at(-1)!.toFixed(2)} bytes ${byteRatios.at(-1)!.toFixed(2)}`)
  }
  console.log(`median B/A: cpu per batch ${median(cpuRatios).toFixed(2)}, bytes per batch ${median(byteRatios).toFixed(2)}`)
}
