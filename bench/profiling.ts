/**
 * `npm run bench -- --profile <dir>`: where toolgate's CPU goes beyond the
 * floor's. Under the 1-call and the 10-call load, the floor, toolgate on the
 * memory store and (when a Redis answers) toolgate on the Redis store each
 * run in a fresh process started with `node --cpu-prof`, one after another.
 * With `taskset` (Linux) each service gets core 1 to itself and the executor
 * and load generator core 0, so the profiler's samples are the service's own
 * CPU rather than time it spent preempted by its peers. Each service's CPU
 * time per batch is measured over the window, and the samples of that window
 * say where it went: self time per batch by package, and toolgate's own
 * code by source file, side by side.
 */
import { mkdir, readdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { type BenchChild, killAll, pin, startChild, trapSignals } from './children.js'
import { serviceTarget } from './clients.js'
import { closedLoop } from './load.js'
import { type ProfileSummary, summarizeProfile } from './profile.js'
import { openBenchRedis } from './redis.js'
import { type BenchSettings, TOOLGATE_NODE_FLAGS } from './settings.js'

/** The services profiled, in the order they run and are shown. */
export const PROFILED = ['floor', 'toolgate', 'toolgate on Redis'] as const
export type Profiled = typeof PROFILED[number]

export interface ProfileRun {
  service: Profiled
  batchSize: number
  file: string
  /** The measuring window, in the profile's clock (µs). */
  fromUs: number
  toUs: number
  callsPerSec: number
  batches: number
  /** The service's user + system CPU time over the window, per batch. */
  cpuUsPerBatch: number
  summary: ProfileSummary
}

export interface ProfileReport {
  pinned: boolean
  runs: ProfileRun[]
  /** Why the Redis store was left out, when it was. */
  redisUnavailable?: string
}

const hrUs = (): number => Number(process.hrtime.bigint() / 1000n)

/** Pins a process (all its threads) to the given cores; false where taskset is missing or refuses. */
function tryPin (pid: number, cores: string): boolean {
  try {
    pin(pid, cores)
    return true
  } catch {
    return false
  }
}

export async function profileServices (root: string, dir: string, s: BenchSettings, logLevel: string, log: (line: string) => void): Promise<ProfileReport> {
  trapSignals()
  const outDir = resolve(dir)
  await mkdir(outDir, { recursive: true })
  const redis = await openBenchRedis()
  const redisUrl = 'url' in redis ? redis.url : null
  const runs: ProfileRun[] = []
  const executor = await startChild('executor', [])
  const pinned = tryPin(process.pid, '0') && tryPin(executor.pid, '0')
  try {
    for (const batchSize of [1, 10]) {
      for (const service of PROFILED) {
        if (service === 'toolgate on Redis' && redisUrl === null) continue
        log(`profiling ${service} under ${batchSize}-call batches, ${s.profile.concurrency} connections${pinned ? ', pinned to core 1' : ''}`)
        if ('url' in redis) await redis.flush()
        const args = service === 'floor' ? [executor.url] : service === 'toolgate' ? [executor.url, logLevel] : [executor.url, logLevel, redisUrl!]
        const child = await startChild(service === 'floor' ? 'floor' : 'toolgate', args, {
          nodeFlags: [...TOOLGATE_NODE_FLAGS, '--cpu-prof', '--cpu-prof-dir', outDir, '--cpu-prof-interval', '250']
        })
        if (pinned) tryPin(child.pid, '1')
        runs.push(await profileOne(root, outDir, service, child, batchSize, s))
      }
    }
  } finally {
    await executor.stop()
    await killAll()
    if ('url' in redis) await redis.flush().catch(() => {}).finally(() => redis.close())
  }
  return { pinned, runs, ...('unavailable' in redis ? { redisUnavailable: redis.unavailable } : {}) }
}

async function profileOne (root: string, outDir: string, service: Profiled, child: BenchChild, batchSize: number, s: BenchSettings): Promise<ProfileRun> {
  const target = serviceTarget(service === 'floor' ? 'floor' : 'toolgate', child.url, s.profile.concurrency)
  const load = { concurrency: s.profile.concurrency, batchSize, runOptions: { maxConcurrentTools: Math.max(8, batchSize) } }
  await closedLoop(target, { ...load, warmupMs: 0, windowMs: s.profile.warmupMs })
  const cpuBefore = await child.cpu()
  const from = hrUs()
  const r = await closedLoop(target, { ...load, warmupMs: 0, windowMs: s.profile.windowMs })
  const to = hrUs()
  const cpuAfter = await child.cpu()
  await target.close()
  await child.stop(15_000)
  // The main thread's (.<pid>.0.): a process whose module hooks run on a thread of their own writes one per thread.
  const file = (await readdir(outDir)).find((f) => f.includes(`.${child.pid}.0.`) && f.endsWith('.cpuprofile'))
  if (file === undefined) throw new Error(`no .cpuprofile for ${service} (pid ${child.pid}) in ${outDir}`)
  const batches = Math.max(1, Math.round(r.callsPerSec * (s.profile.windowMs / 1000) / batchSize))
  return {
    service,
    batchSize,
    file: join(outDir, file),
    fromUs: from,
    toUs: to,
    callsPerSec: r.callsPerSec,
    batches,
    cpuUsPerBatch: (cpuAfter.cpuUs - cpuBefore.cpuUs) / batches,
    summary: summarizeProfile(join(outDir, file), root, from, to)
  }
}

/** µs per batch of a line of `ms` self time over the run's window. */
const perBatch = (run: ProfileRun, ms: number): number => (ms * 1000) / run.batches

/**
 * Tables per batch size: CPU per batch, then self time per batch by package
 * and by toolgate source file, one column per service, largest first; then
 * each service's own detailed summary.
 */
export function profileMarkdown (report: ProfileReport): string {
  const out: string[] = []
  out.push(`Services ${report.pinned ? 'pinned to core 1 (the executor and load generator on core 0)' : 'not pinned (taskset unavailable)'}; self time per batch is sampled wall time, so unpinned it includes time spent preempted.`)
  if (report.redisUnavailable !== undefined) out.push(`No Redis for the Redis store (${report.redisUnavailable}): memory only.`)
  out.push('')
  for (const batchSize of [...new Set(report.runs.map((r) => r.batchSize))]) {
    const runs = report.runs.filter((r) => r.batchSize === batchSize)
    const header = `| ${batchSize}-call batches, µs per batch | ${runs.map((r) => r.service).join(' | ')} |`
    const rule = `| --- |${runs.map(() => ' ---: |').join('')}`
    out.push(`### ${batchSize}-call batches`, '', header, rule)
    out.push(`| calls/s under the profiler | ${runs.map((r) => Math.round(r.callsPerSec)).join(' | ')} |`)
    out.push(`| **CPU per batch** (user + system) | ${runs.map((r) => `**${r.cpuUsPerBatch.toFixed(0)}**`).join(' | ')} |`)
    out.push(...sideBySide(runs, (r) => r.summary.byPackage, 14))
    out.push('', `| toolgate's own code by file, µs per batch | ${runs.map((r) => r.service).join(' | ')} |`, rule)
    out.push(...sideBySide(runs, (r) => r.summary.ownFiles, 16))
    out.push('')
  }
  for (const r of report.runs) out.push(...detail(r))
  return out.join('\n')
}

/** Rows of a line kind across the runs: the names largest in any run first. */
function sideBySide (runs: readonly ProfileRun[], lines: (r: ProfileRun) => ProfileSummary['byPackage'], top: number): string[] {
  const names = new Map<string, number>()
  // Idle is no one's CPU: the CPU row above is what the service used.
  for (const r of runs) for (const l of lines(r)) if (l.name !== 'idle') names.set(l.name, Math.max(names.get(l.name) ?? 0, perBatch(r, l.ms)))
  return [...names].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name]) =>
    `| ${name} | ${runs.map((r) => perBatch(r, lines(r).find((l) => l.name === name)?.ms ?? 0).toFixed(1)).join(' | ')} |`)
}

function detail (r: ProfileRun): string[] {
  const s = r.summary
  const table = (title: string, lines: ProfileSummary['byPackage']): string[] => [
    `| ${title} | µs per batch | share |`, '| --- | ---: | ---: |',
    ...lines.map((l) => `| ${l.name} | ${perBatch(r, l.ms).toFixed(1)} | ${(l.share * 100).toFixed(1)}% |`), ''
  ]
  return [
    `### ${r.service}, ${r.batchSize}-call batches (${Math.round(r.callsPerSec)} calls/s under the profiler, ${s.sampledMs} ms sampled)`,
    `Profile: ${r.file} (window ${r.fromUs}–${r.toUs} µs)`, '',
    ...table('package (inclusive: any of its frames on the stack)', s.packageInclusive),
    ...table('any function (self time)', s.allSelf),
    ...table('toolgate function (self time)', s.ownSelf),
    ...table('toolgate function (inclusive time)', s.ownInclusive)
  ]
}
