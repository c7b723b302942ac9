/**
 * `npm run bench -- --profile <dir>`: toolgate under the 1-call and the
 * 10-call load, each in a fresh process started with `node --cpu-prof`, and
 * a summary of where its CPU went during the measuring window only.
 */
import { mkdir, readdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { killAll, startChild, trapSignals } from './children.js'
import { serviceTarget } from './clients.js'
import { closedLoop } from './load.js'
import { type ProfileSummary, summarizeProfile } from './profile.js'
import { type BenchSettings, TOOLGATE_NODE_FLAGS } from './settings.js'

export interface ProfileRun {
  batchSize: number
  file: string
  /** The measuring window, in the profile's clock (µs). */
  fromUs: number
  toUs: number
  callsPerSec: number
  summary: ProfileSummary
}

const hrUs = (): number => Number(process.hrtime.bigint() / 1000n)

export async function profileToolgate (root: string, dir: string, s: BenchSettings, logLevel: string, log: (line: string) => void): Promise<ProfileRun[]> {
  trapSignals()
  const outDir = resolve(dir)
  await mkdir(outDir, { recursive: true })
  const runs: ProfileRun[] = []
  const executor = await startChild('executor', [])
  try {
    for (const batchSize of [1, 10]) {
      log(`profiling toolgate under ${batchSize}-call batches, ${s.profile.concurrency} connections`)
      const toolgate = await startChild('toolgate', [executor.url, logLevel], {
        nodeFlags: [...TOOLGATE_NODE_FLAGS, '--cpu-prof', '--cpu-prof-dir', outDir, '--cpu-prof-interval', '250']
      })
      const target = serviceTarget('toolgate', toolgate.url, s.profile.concurrency)
      const load = { concurrency: s.profile.concurrency, batchSize, runOptions: { maxConcurrentTools: Math.max(8, batchSize) } }
      await closedLoop(target, { ...load, warmupMs: 0, windowMs: s.profile.warmupMs })
      const from = hrUs()
      const r = await closedLoop(target, { ...load, warmupMs: 0, windowMs: s.profile.windowMs })
      const to = hrUs()
      await target.close()
      await toolgate.stop(15_000)
      const file = (await readdir(outDir)).filter((f) => f.includes(`.${toolgate.pid}.`) && f.endsWith('.cpuprofile'))[0]
      if (file === undefined) throw new Error(`no .cpuprofile for toolgate (pid ${toolgate.pid}) in ${outDir}`)
      runs.push({ batchSize, file: join(outDir, file), fromUs: from, toUs: to, callsPerSec: r.callsPerSec, summary: summarizeProfile(join(outDir, file), root, from, to) })
    }
  } finally {
    await executor.stop()
    await killAll()
  }
  return runs
}

export function profileMarkdown (runs: readonly ProfileRun[]): string {
  const out: string[] = []
  for (const r of runs) {
    const s = r.summary
    out.push(`### toolgate, ${r.batchSize}-call batches (${Math.round(r.callsPerSec)} calls/s under the profiler, ${s.sampledMs} ms sampled)`)
    out.push(`Profile: ${r.file} (window ${r.fromUs}–${r.toUs} µs)`)
    out.push('')
    out.push('| self time by package | ms | share |')
    out.push('| --- | ---: | ---: |')
    for (const l of s.byPackage) out.push(`| ${l.name} | ${l.ms} | ${(l.share * 100).toFixed(1)}% |`)
    out.push('')
    out.push('| package (inclusive time: any of its frames on the stack) | ms | share |')
    out.push('| --- | ---: | ---: |')
    for (const l of s.packageInclusive) out.push(`| ${l.name} | ${l.ms} | ${(l.share * 100).toFixed(1)}% |`)
    out.push('')
    out.push('| any function (self time) | ms | share |')
    out.push('| --- | ---: | ---: |')
    for (const l of s.allSelf) out.push(`| ${l.name} | ${l.ms} | ${(l.share * 100).toFixed(1)}% |`)
    out.push('')
    out.push('| toolgate function (self time) | ms | share |')
    out.push('| --- | ---: | ---: |')
    for (const l of s.ownSelf) out.push(`| ${l.name} | ${l.ms} | ${(l.share * 100).toFixed(1)}% |`)
    out.push('')
    out.push('| toolgate function (inclusive time) | ms | share |')
    out.push('| --- | ---: | ---: |')
    for (const l of s.ownInclusive) out.push(`| ${l.name} | ${l.ms} | ${(l.share * 100).toFixed(1)}% |`)
    out.push('')
  }
  return out.join('\n')
}
