/**
 * What each run-level rule (src/guards/) costs a warm batch, in instructions
 * counted by valgrind's callgrind (no hardware counters needed):
 *
 *   node dist/bench/guard-cost.js [--sizes 1,10] [--warmup 3000] [--window 2000]
 *     [--guards limits,loops,...] [--parallel 2] [--json]
 *
 * For each batch size, this build's service (`instructions-child.js`: a run
 * created, one batch through the engine on the memory store, the run ended,
 * a tool answering in-process) runs under callgrind with every guard, then
 * with each guard left out (the engine's `withoutGuards`), then with every
 * guard again; <parallel> processes at a time. Callgrind counts nothing
 * until the child has run <warmup> iterations (V8 has compiled and optimized
 * the batch path by then), then counts the next <window> and stops: start-up
 * and warm-up are not in the figure at all. Each figure is taken outside V8's
 * optimizing compiler (callgrind_annotate's inclusive cost of
 * `GetOrCompileOptimized` taken off): V8 still optimizes functions long after
 * the warm-up, when each has done enough work, so leaving a guard out moves
 * other functions' compiles into or out of the window, by more than a guard
 * costs. A guard's cost is the figure with every guard less the one without
 * it. The second count with every guard is the noise (the collector does not
 * run at quite the same points); a cost inside it is none this can tell.
 *
 * `--warmup 0 --window 300` gives the cold figure instead: a process's first
 * 300 batches, mostly V8 parsing and compiling.
 */
import { execFile, spawn } from 'node:child_process'
import { realpathSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { collectorInstructions, compilerInstructions, instructionTotal } from './instructions.js'
import { integerOption } from './options.js'

const execFileText = promisify(execFile)

/** The registered guards, in registration order (src/guards/index.ts). */
export const GUARDS = ['limits', 'loops', 'approvals', 'write_ahead', 'retry_safety', 'tenant_key', 'arrivals'] as const

export interface GuardCostOptions {
  sizes: number[]
  /** Batches run before either count starts: V8 compiles and optimizes the batch path in them. */
  warmup: number
  /** Batches counted after the warm-up. */
  window: number
  guards: string[]
  /** Counted processes at a time (each is one core's work; valgrind's counts do not depend on it). */
  parallel: number
}

/** What one count executed per warm batch: in all, outside V8's optimizing compiler, and outside its collector too. */
export interface PerBatch {
  total: number
  /** The instructions outside `GetOrCompileOptimized`: the batch's own work and the collector's. */
  rest: number
  /** `rest` less the collections (`Heap::CollectGarbage`): the batch's own work (incremental marking steps stay in). */
  own: number
}

/**
 * One batch size's figures, per warm batch: with every guard (twice: the
 * noise), and without each. A guard's cost is on `rest`: when a function
 * gets optimized depends on the work every function has done, so leaving a
 * guard out moves other functions' compiles into or out of the window, by
 * more than a guard costs.
 */
export interface SizeCost {
  size: number
  all: PerBatch
  allAgain: PerBatch
  without: Record<string, PerBatch>
  /** By guard: `all.own` less `without[guard].own`, the guard's own instructions per batch. */
  cost: Record<string, number>
  /** By guard: the same on `rest`, the collections its garbage causes in. */
  costWithCollector: Record<string, number>
}

const CHILD = fileURLToPath(new URL('./instructions-child.js', import.meta.url))
const DIST = fileURLToPath(new URL('../', import.meta.url))

/**
 * Runs the child under callgrind with instrumentation off until it is warm,
 * on for its <iterations> (turned by vgdb while the child waits), off again:
 * the instructions of those iterations only.
 */
async function count (size: number, warmup: number, iterations: number, without: string | undefined): Promise<PerBatch> {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-guard-cost-'))
  try {
    const outFile = join(dir, 'callgrind.out')
    const total = await counted(size, warmup, iterations, without, outFile)
    const annotated = await execFileText('callgrind_annotate', ['--inclusive=yes', '--threshold=100', outFile], { maxBuffer: 256 * 1024 * 1024 })
    const compiler = compilerInstructions(annotated.stdout)
    if (compiler === null) throw new Error('callgrind_annotate named no GetOrCompileOptimized: the optimizing compiler\'s share is unknown')
    // A batch that allocates nothing in the window collects nothing: no line for the collector.
    const collector = collectorInstructions(annotated.stdout) ?? 0
    return { total: total / iterations, rest: (total - compiler) / iterations, own: (total - compiler - collector) / iterations }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** One count under callgrind into `outFile`; its total instructions. */
async function counted (size: number, warmup: number, iterations: number, without: string | undefined, outFile: string): Promise<number> {
  const what = `the count of ${iterations} ${size}-call batches after ${warmup}${without === undefined ? '' : ` without ${without}`}`
  const args = [
    '--tool=callgrind', '--instr-atstart=no', '--vgdb=yes', `--callgrind-out-file=${outFile}`,
    // V8 writes the code it runs: valgrind must see every write to it.
    '--smc-check=all-non-file',
    process.execPath,
    '--no-deprecation', '--predictable', '--predictable-gc-schedule', '--hash-seed=1', '--random-seed=1',
    CHILD, '--window', DIST, String(size), String(warmup), String(iterations), ...(without === undefined ? [] : [without])
  ]
  return await new Promise<number>((resolvePromise, reject) => {
    const child = spawn('valgrind', args, { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let turns = Promise.resolve()
    const instrumentation = async (state: 'on' | 'off'): Promise<void> => {
      const pid = /^==(\d+)==/m.exec(stderr)?.[1]
      if (pid === undefined) throw new Error(`valgrind printed no process id:\n${stderr.slice(-2000)}`)
      await execFileText('vgdb', [`--pid=${pid}`, 'instrumentation', state])
      child.stdin.write('go\n')
    }
    let partial = ''
    child.stdout.on('data', (c: Buffer) => {
      const lines = (partial + c.toString()).split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) {
        stdout += `${line}\n`
        const state = line === 'warm' ? 'on' : line === 'counted' ? 'off' : undefined
        if (state !== undefined) turns = turns.then(async () => { await instrumentation(state) }).catch((err: Error) => { child.kill(); reject(err) })
      }
    })
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'ENOENT' ? new Error('valgrind is not installed (Debian: apt-get install valgrind)') : err)
    })
    child.on('close', (code) => {
      if (code !== 0 || stdout !== `warm\ncounted\n${iterations}\n`) {
        reject(new Error(`${what} failed (exit ${String(code)}):\n${stdout.slice(-500)}\n${stderr.slice(-3000)}`))
        return
      }
      try { resolvePromise(instructionTotal(stderr)) } catch (err) { reject(err) }
    })
  })
}

/** Runs `jobs`, `parallel` at a time; their answers in order. */
async function pool<T> (jobs: ReadonlyArray<() => Promise<T>>, parallel: number): Promise<T[]> {
  const out: T[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const i = next++
      const job = jobs[i]
      if (job !== undefined) out[i] = await job()
    }
  }
  await Promise.all(Array.from({ length: Math.min(parallel, jobs.length) }, worker))
  return out
}

export async function guardCosts (opts: GuardCostOptions, log: (line: string) => void): Promise<SizeCost[]> {
  const out: SizeCost[] = []
  for (const size of opts.sizes) {
    const variants: Array<string | undefined> = [undefined, ...opts.guards, undefined]
    const counts = await pool(variants.map((g) => async () => {
      const perBatch = await count(size, opts.warmup, opts.window, g)
      log(`${size}-call batches, ${g === undefined ? 'every guard' : `without ${g}`}: ${Math.round(perBatch.total)} instructions per batch, ${Math.round(perBatch.rest)} outside the optimizing compiler, ${Math.round(perBatch.own)} outside the collector too`)
      return perBatch
    }), opts.parallel)
    const at = (i: number): PerBatch => counts[i] ?? { total: 0, rest: 0, own: 0 }
    const all = at(0)
    const without: Record<string, PerBatch> = {}
    const cost: Record<string, number> = {}
    const costWithCollector: Record<string, number> = {}
    opts.guards.forEach((g, i) => {
      without[g] = at(i + 1)
      cost[g] = all.own - at(i + 1).own
      costWithCollector[g] = all.rest - at(i + 1).rest
    })
    const figures = { size, all, allAgain: at(counts.length - 1), without, cost, costWithCollector }
    log(`${size}-call batches: ${JSON.stringify(figures)}`)
    out.push(figures)
  }
  return out
}

export function guardCostMarkdown (costs: readonly SizeCost[], opts: GuardCostOptions): string {
  const n = (x: number): string => Math.round(x).toLocaleString('en-US')
  const both = (own: number, withCollector: number): string => `${n(own)} | ${n(withCollector)}`
  const lines = [
    `Instructions per warm batch under callgrind (an iteration: create a run, one batch, end the run), counted over ${opts.window} iterations after ${opts.warmup} uncounted ones, outside V8's optimizing compiler: the batch's own work, and with the collections in it; a guard's cost is the figure with every guard less the one without it.`,
    '',
    `| guard | ${costs.map((c) => `${c.size}-call: own | with the collector`).join(' | ')} |`,
    `| --- | ${costs.map(() => '---: | ---:').join(' | ')} |`,
    ...opts.guards.map((g) => `| ${g} | ${costs.map((c) => both(c.cost[g] ?? 0, c.costWithCollector[g] ?? 0)).join(' | ')} |`),
    `| every guard: the whole iteration | ${costs.map((c) => both(c.all.own, c.all.rest)).join(' | ')} |`,
    `| noise: every guard counted again, less the first | ${costs.map((c) => both(c.allAgain.own - c.all.own, c.allAgain.rest - c.all.rest)).join(' | ')} |`,
    `| the optimizing compiler's in the window, every guard | ${costs.map((c) => `${n(c.all.total - c.all.rest)} | –`).join(' | ')} |`
  ]
  return lines.join('\n')
}

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '1,10' },
      warmup: { type: 'string', default: '3000' },
      window: { type: 'string', default: '2000' },
      parallel: { type: 'string', default: '2' },
      guards: { type: 'string', default: GUARDS.join(',') },
      json: { type: 'boolean', default: false }
    }
  })
  const opts: GuardCostOptions = {
    sizes: values.sizes.split(',').map((s) => integerOption('sizes', s, 1)),
    warmup: integerOption('warmup', values.warmup, 0),
    window: integerOption('window', values.window, 1),
    parallel: integerOption('parallel', values.parallel, 1),
    guards: values.guards.split(',').filter((g) => g !== '')
  }
  const costs = await guardCosts(opts, (line) => process.stderr.write(`${line}\n`))
  process.stdout.write(values.json ? `${JSON.stringify({ options: opts, costs }, null, 2)}\n` : `${guardCostMarkdown(costs, opts)}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await main()
