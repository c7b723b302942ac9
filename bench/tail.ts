/**
 * Where the Redis store's latency tail comes from: the bench's 1-call
 * latency row (an open loop at a fixed rate over 32 runs;
 * `--batch 10 --rate 100` is its 10-call row), toolgate on the memory store
 * and on Redis in their own processes with bench/tail-probe.ts preloaded,
 * and the relay as the reference, in rounds. Per round and target:
 * p50, p99 and the batches slower than the relay's p99 (at least 5 ms), each
 * put down to what overlapped it in toolgate's process: a collector pause, else
 * a Redis command that took over 2 ms from send to reply, else neither.
 * Beside it: the collector's pauses, the event loop's delay, the Redis
 * commands' times as the client saw them, the server's own time per EVALSHA
 * (INFO commandstats, every client of the server counted) and its SLOWLOG
 * entries of 1 ms and more (every client's: the threshold is set for the run
 * and put back after). The load average is printed with every row.
 *
 *   npm run build && node dist/bench/tail.js [--rounds 4] [--rate 500] [--batch 1] [--warmup-ms 8000] [--lease-ms 30000] [--semi-space 64]
 *
 * --lease-ms is TOOLGATE_LEASE_MS (renewals every third of it); --semi-space the young generation's
 * semi-space in MiB (toolgate ships with 64) for both toolgate processes.
 *
 * Redis: TOOLGATE_BENCH_REDIS (default database 5 on 127.0.0.1), flushed
 * before and after.
 */
import { loadavg } from 'node:os'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { type BenchChild, killAll, startChild, trapSignals } from './children.js'
import { type Target, serviceTarget } from './clients.js'
import { closedLoop, openLoop } from './load.js'
import { openBenchRedis } from './redis.js'
import { TOOLGATE_NODE_FLAGS } from './settings.js'
import { percentile, sig } from './stats.js'
import type { ProbeAnswer } from './tail-probe.js'

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '4' }, rate: { type: 'string', default: '500' }, batch: { type: 'string', default: '1' }, 'warmup-ms': { type: 'string', default: '8000' }, 'lease-ms': { type: 'string', default: '30000' }, 'semi-space': { type: 'string', default: '64' } } })
const ROUNDS = Number(values.rounds)
const RATE = Number(values.rate)
const BATCH = Number(values.batch)
if (!Number.isInteger(BATCH) || BATCH < 1) throw new Error(`--batch takes a whole number of calls, got ${JSON.stringify(values.batch)}`)
const PROBE = fileURLToPath(new URL(`./tail-probe${extname(fileURLToPath(import.meta.url))}`, import.meta.url))

type Interval = [number, number]
/** Each round's open loop: its warm-up and its measured window. */
const WARMUP_MS = 200
const WINDOW_MS = 1200
const overlaps = (xs: Interval[], a: number, b: number): boolean => xs.some(([s, e]) => s < b && e > a)

async function commandStats (admin: Redis): Promise<{ calls: number, usec: number }> {
  const line = (await admin.info('commandstats')).split('\n').find((l) => l.startsWith('cmdstat_evalsha:'))
  const field = (k: string): number => Number(new RegExp(`${k}=(\\d+)`).exec(line ?? '')?.[1] ?? 0)
  return { calls: field('calls'), usec: field('usec') }
}

trapSignals()
const redis = await openBenchRedis()
if (!('url' in redis)) throw new Error(`no Redis: ${redis.unavailable}`)
await redis.flush()
const admin = new Redis(redis.url)
const slowWas = (await admin.config('GET', 'slowlog-log-slower-than') as string[])[1] ?? '10000'
const children: BenchChild[] = []
const targets: Target[] = []
try {
  const flags = [`--max-semi-space-size=${values['semi-space']}`, '--import', PROBE]
  const env = process.env.TOOLGATE_LEASE_MS
  process.env.TOOLGATE_LEASE_MS = values['lease-ms']
  const executor = await startChild('executor', [])
  const [relay, memory, onRedis] = await Promise.all([
    startChild('relay', [executor.url], { nodeFlags: [...TOOLGATE_NODE_FLAGS] }),
    startChild('toolgate', [executor.url, 'info', 'memory'], { nodeFlags: flags }),
    startChild('toolgate', [executor.url, 'info', redis.url], { nodeFlags: flags })
  ])
  if (env === undefined) delete process.env.TOOLGATE_LEASE_MS
  else process.env.TOOLGATE_LEASE_MS = env
  children.push(executor, relay, memory, onRedis)
  const byName = { relay: { target: serviceTarget('relay', relay.url, 50), child: undefined }, memory: { target: serviceTarget('toolgate', memory.url, 50), child: memory }, redis: { target: serviceTarget('redis', onRedis.url, 50), child: onRedis } }
  targets.push(...Object.values(byName).map((x) => x.target))
  // What the bench runs before its latency rows: closed loops at both batch sizes.
  for (const { target } of Object.values(byName)) {
    for (const batchSize of [10, 1]) await closedLoop(target, { concurrency: 50, batchSize, warmupMs: 0, windowMs: Number(values['warmup-ms']) / 2, runOptions: { maxConcurrentTools: 10 } })
  }
  await admin.config('SET', 'slowlog-log-slower-than', '1000')
  let lastSlow = Number((await admin.slowlog('GET', 1) as Array<[number]>)[0]?.[0] ?? -1)
  let relayP99 = 5
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, { target, child }] of Object.entries(byName)) {
      await child?.probe()
      const cpuBefore = await child?.cpu()
      const before = await commandStats(admin)
      const r = await openLoop(target, { rate: RATE, batchSize: BATCH, warmupMs: WARMUP_MS, windowMs: WINDOW_MS, runOptions: { maxConcurrentTools: Math.max(8, BATCH) }, runs: 32 })
      const { dropped } = r
      const batches = r.latencies.map((ms, i): [number, number] => [r.sentAt[i]!, ms])
      const after = await commandStats(admin)
      const times = batches.map(([, ms]) => ms)
      const p99 = percentile(times, 99)
      let line = `round ${round} ${name}: load ${loadavg()[0]!.toFixed(2)}, p50 ${sig(percentile(times, 50))} ms, p99 ${sig(p99)} ms, max ${sig(Math.max(...times))} ms, dropped ${dropped}`
      if (child !== undefined) {
        const cpuAfter = await child.cpu()
        // Over every batch the open loop sent, its warm-up's included (`latencies` holds only the window's); the CPU also covers opening and ending the round's runs.
        const sent = Math.max(1, Math.round(RATE * (WARMUP_MS + WINDOW_MS) / 1000) - r.dropped)
        line += `, CPU ${sig((cpuAfter.cpuUs - cpuBefore!.cpuUs) / sent)} µs per batch sent`
        const probe: ProbeAnswer = await child.probe()
        const at = (t: number): number => probe.origin + t
        const pauses: Interval[] = probe.gcs.map(([s, d]) => [at(s), at(s) + d])
        const slowCommands: Interval[] = probe.commands.filter(([, d]) => d > 2).map(([s, d]) => [at(s), at(s) + d])
        const limit = Math.max(5, relayP99)
        const slow = batches.filter(([, ms]) => ms > limit)
        const inGc = slow.filter(([s, ms]) => overlaps(pauses, s, s + ms)).length
        const inCommand = slow.filter(([s, ms]) => !overlaps(pauses, s, s + ms) && overlaps(slowCommands, s, s + ms)).length
        const gcMs = probe.gcs.map(([, d]) => d)
        line += `; slower than ${sig(limit)} ms: ${slow.length} (in a collector pause ${inGc}, else in a Redis command over 2 ms ${inCommand}, neither ${slow.length - inGc - inCommand})` +
          `; collector pauses ${gcMs.length}, longest ${sig(Math.max(0, ...gcMs))} ms, kinds ${[...new Set(probe.gcs.map(([, , k]) => k))].join('/') || '–'}` +
          `; event-loop delay p99 ${sig(probe.loopDelayMs.p99)} ms, max ${sig(probe.loopDelayMs.max)} ms`
        if (name === 'redis') {
          const cmd = probe.commands.map(([, d]) => d)
          const evals = after.calls - before.calls
          const slowlog = (await admin.slowlog('GET', 128) as Array<[number, number, number, string[]]>).filter((e) => e[0] > lastSlow)
          if (slowlog.length > 0) lastSlow = Math.max(...slowlog.map((e) => e[0]))
          line += `; Redis commands, send to reply: p50 ${sig(percentile(cmd, 50))} ms, p99 ${sig(percentile(cmd, 99))} ms, max ${sig(Math.max(0, ...cmd))} ms` +
            `; server EVALSHA ${evals > 0 ? sig((after.usec - before.usec) / evals) : 0} µs each; SLOWLOG ≥ 1 ms (any client) ${slowlog.length}` +
            (slowlog.length > 0 ? `, longest ${sig(Math.max(...slowlog.map((e) => e[2])) / 1000)} ms (${slowlog.sort((a, b) => b[2] - a[2])[0]![3][0]})` : '')
        }
      } else {
        relayP99 = p99
      }
      console.log(line)
    }
  }
} finally {
  await admin.config('SET', 'slowlog-log-slower-than', slowWas).catch(() => {})
  await Promise.allSettled(targets.map((t) => t.close()))
  await Promise.allSettled(children.map((c) => c.stop()))
  await killAll()
  await redis.flush().finally(() => redis.close())
  admin.disconnect()
}
