/**
 * Two builds of toolgate against each other, paired: what the full bench
 * cannot resolve on a shared 2-core machine (its ratios move by ±0.1 from
 * run to run) this can, a change of a few percent.
 *
 *   node dist/bench/compare.js <distA> <distB> [--batch 1] [--conns 50]
 *     [--rounds 8] [--window-ms 1500] [--pin] [--store redis://127.0.0.1:6379/5] [--json]
 *
 * Each <dist> is a built tree (what `npm run build` writes to dist/) with
 * the project's node_modules reachable from it, e.g. a git worktree of the
 * other commit, built, with node_modules linked in. Both builds serve one
 * executor; a closed loop drives one build at a time, in rounds that
 * alternate which goes first, and each round gives B's throughput over A's.
 * With --pin (Linux, taskset) the services get one core and the executor and
 * load generator the other, so the ratio is each build's cost per batch and
 * not where the scheduler happened to put the processes. With --store both
 * builds run on that Redis, each under a key prefix of its own.
 */
import { realpathSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type * as children from './children.js'
import { type BenchChild, killAll, pin, startChild, trapSignals } from './children.js'
import { serviceTarget } from './clients.js'
import { closedLoop } from './load.js'
import { integerOption } from './options.js'
import { type BenchRedis, openBenchRedis } from './redis.js'
import { TOOLGATE_NODE_FLAGS } from './settings.js'
import { median } from './stats.js'

export interface CompareOptions {
  batchSize: number
  concurrency: number
  rounds: number
  windowMs: number
  warmupMs: number
  pin: boolean
  /** A redis:// URL: both builds on the Redis store, each under a key prefix of its own (the database is flushed before and after); memory when absent. */
  store?: string
}

export interface BuildFigures {
  dist: string
  /** Calls per second, per round. */
  callsPerSec: number[]
  /** The service's CPU time per batch (µs), per round. */
  cpuUsPerBatch: number[]
}

export interface Comparison {
  options: CompareOptions
  a: BuildFigures
  b: BuildFigures
  /** B's calls per second over A's, per round. */
  ratios: number[]
  median: number
}

type ChildModule = typeof children

export async function compareBuilds (distA: string, distB: string, opts: CompareOptions, log: (line: string) => void): Promise<Comparison> {
  trapSignals()
  const executor = await startChild('executor', [])
  // Each build's service starts from that build's own bench/child.js.
  const modules: ChildModule[] = await Promise.all([distA, distB].map(async (dist) =>
    await import(pathToFileURL(resolve(dist, 'bench', 'children.js')).href) as ChildModule))
  const services: BenchChild[] = []
  let flush: BenchRedis | undefined
  try {
    const redis = opts.store === undefined ? undefined : await openBenchRedis(opts.store)
    if (redis !== undefined && 'unavailable' in redis) throw new Error(`No Redis at ${opts.store}: ${redis.unavailable}`)
    await redis?.flush()
    flush = redis
    for (const [i, m] of modules.entries()) {
      const store = opts.store === undefined ? [] : [storeWithPrefix(opts.store, `compare-${'ab'[i]}:`)]
      services.push(await m.startChild('toolgate', [executor.url, 'info', ...store], { nodeFlags: [...TOOLGATE_NODE_FLAGS] }))
    }
    if (opts.pin) {
      pin(process.pid, '0')
      pin(executor.pid, '0')
      for (const s of services) pin(s.pid, '1')
    }
    const targets = services.map((s) => serviceTarget('toolgate', s.url, opts.concurrency))
    const load = { concurrency: opts.concurrency, batchSize: opts.batchSize, runOptions: { maxConcurrentTools: Math.max(8, opts.batchSize) } }
    for (const target of targets) await closedLoop(target, { ...load, warmupMs: 0, windowMs: opts.warmupMs })

    const figures: BuildFigures[] = [distA, distB].map((dist) => ({ dist, callsPerSec: [], cpuUsPerBatch: [] }))
    for (let round = 0; round < opts.rounds; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0]
      for (const i of order) {
        const r = await closedLoop(targets[i]!, { ...load, warmupMs: Math.min(300, opts.warmupMs), windowMs: opts.windowMs, service: services[i]! })
        figures[i]!.callsPerSec.push(r.callsPerSec)
        figures[i]!.cpuUsPerBatch.push((r.serviceCpuUsPerCall ?? Number.NaN) * opts.batchSize)
      }
      log(`round ${round + 1}/${opts.rounds}: B / A ${(figures[1]!.callsPerSec[round]! / figures[0]!.callsPerSec[round]!).toFixed(3)}`)
    }
    await Promise.all(targets.map((t) => t.close()))
    const [a, b] = figures as [BuildFigures, BuildFigures]
    const ratios = a.callsPerSec.map((x, i) => b.callsPerSec[i]! / x)
    return { options: opts, a, b, ratios, median: median(ratios) }
  } finally {
    for (const s of services) await s.stop()
    await executor.stop()
    for (const m of modules) await m.killAll()
    await killAll()
    const redis = flush
    if (redis !== undefined) await redis.flush().catch(() => {}).finally(() => redis.close())
  }
}

/** The store URL with a key prefix of its own, so two builds on one database never share a key. */
function storeWithPrefix (url: string, prefix: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}prefix=${encodeURIComponent(prefix)}`
}

export function comparisonMarkdown (c: Comparison): string {
  const o = c.options
  const row = (name: string, f: BuildFigures): string =>
    `| ${name} | ${f.dist} | ${Math.round(median(f.callsPerSec)).toLocaleString('en-US')} | ${median(f.cpuUsPerBatch).toFixed(1)} |`
  return [
    `${o.batchSize}-call batches, ${o.concurrency} connections, ${o.rounds} rounds of ${o.windowMs} ms${o.pin ? ', services pinned to core 1' : ''}${o.store === undefined ? '' : ', on the Redis store'}; medians.`,
    '',
    '| build | dist | calls/s | CPU µs per batch |',
    '| --- | --- | ---: | ---: |',
    row('A', c.a),
    row('B', c.b),
    '',
    `B / A: **${c.median.toFixed(3)}** (rounds ${c.ratios.map((r) => r.toFixed(2)).join(', ')})`
  ].join('\n')
}

async function main (): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      batch: { type: 'string', default: '1' },
      conns: { type: 'string', default: '50' },
      rounds: { type: 'string', default: '8' },
      'window-ms': { type: 'string', default: '1500' },
      'warmup-ms': { type: 'string', default: '1500' },
      pin: { type: 'boolean', default: false },
      store: { type: 'string' },
      json: { type: 'boolean', default: false }
    }
  })
  if (positionals.length !== 2) throw new TypeError('Usage: compare.js <distA> <distB> [--batch N] [--conns N] [--rounds N] [--window-ms N] [--warmup-ms N] [--pin] [--store redis://HOST:PORT/DB] [--json]')
  const int = (name: string, text: string): number => integerOption(name, text, 1)
  const opts: CompareOptions = {
    batchSize: int('batch', values.batch),
    concurrency: int('conns', values.conns),
    rounds: int('rounds', values.rounds),
    windowMs: int('window-ms', values['window-ms']),
    warmupMs: int('warmup-ms', values['warmup-ms']),
    pin: values.pin,
    ...(values.store === undefined ? {} : { store: values.store })
  }
  const c = await compareBuilds(positionals[0]!, positionals[1]!, opts, (line) => process.stderr.write(`compare: ${line}\n`))
  process.stdout.write((values.json ? JSON.stringify(c, null, 2) : comparisonMarkdown(c)) + '\n')
}

// Node resolves symlinks in a module's URL but not in argv[1]: compare real paths, or a linked checkout would run nothing.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await main()
