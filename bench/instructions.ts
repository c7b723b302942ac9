/**
 * Two builds compared by the instructions a batch executes, counted by
 * valgrind's callgrind: a figure no other process on the machine can move,
 * for changes too small for `compare.js`'s timings to tell from noise.
 *
 *   node dist/bench/instructions.js <distA> <distB> [--batch 1] [--warmup 2000]
 *     [--short 200] [--long 2200] [--keep <dir>] [--json]
 *
 * Each build runs `instructions-child.js` (this build's, loading the other
 * build's service) twice under callgrind, with <warmup> + <short> and
 * <warmup> + <long> iterations (create a run, one batch, end the run); the
 * difference of the two totals over the difference of the iterations is one
 * iteration's instructions, start-up and warm-up cancelled out. Node runs
 * with `--predictable` and fixed hash and random seeds, the tool answers
 * in-process and requests go through `inject`. Two counts of one build
 * still differ: by 0.3-1.3% of their totals, and so by 2-8% per 1-call
 * iteration, on 2026-12-05 with other work on the machine (docs/performance.md,
 * "Counting instructions"): compare a build with itself before reading a
 * difference of a few percent.
 *
 * Functions called once per batch are still being optimized long after the
 * warm-up (V8 tiers a function up by the work it has done, not by time), and
 * when they are is a matter of each build's code: one build can compile
 * twenty functions more than the other inside the counted iterations. So
 * each figure is split: the instructions V8's optimizing compiler ran
 * (callgrind's inclusive cost of `GetOrCompileOptimized`, the one way into
 * it), and the rest, the batch's own work and the collector's. The rest is
 * what a warm service pays per batch; the total is what this run paid. The
 * rest is split again: the collections (the inclusive cost of
 * `Heap::CollectGarbage`, every stop-the-world collection) and the batch's
 * own work (incremental marking steps stay in it). A collection is a lump of tens of millions of instructions, so
 * one more or one fewer in a build's counted window moves its rest by a
 * percent or two at one call a batch; the own work is the figure a small
 * change moves by itself (what it allocates shows in how often the
 * collections come, over longer windows).
 *
 * What this does not see: sockets, the HTTP executor, and time the same
 * instructions take longer (cache misses, a busy machine). Two runs go at a
 * time; a pair at the defaults takes some ten minutes (1-call) to fifteen
 * (10-call) on 2 cores.
 */
import { execFile, spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { integerOption } from './options.js'

export interface InstructionOptions {
  batchSize: number
  warmup: number
  short: number
  long: number
}

/** What one counted run executed. */
export interface RunCount {
  /** Every instruction of the process. */
  total: number
  /** Those of V8's optimizing compiler; null where callgrind_annotate could not name it. */
  compiler: number | null
  /** Those of the stop-the-world collections (`Heap::CollectGarbage`); 0 where none ran. */
  collector: number
}

export interface BuildInstructions {
  dist: string
  /** Total instructions of the short and the long run. */
  short: number
  long: number
  perIteration: number
  /** Per iteration: the optimizing compiler's share, and the rest (null when the share is unknown). */
  compilerPerIteration: number | null
  restPerIteration: number | null
  /** Per iteration: the collections' share of the rest, and the rest without them: the batch's own work. */
  collectorPerIteration: number
  ownPerIteration: number | null
}

export interface InstructionComparison {
  options: InstructionOptions
  a: BuildInstructions
  b: BuildInstructions
  /** B's instructions per iteration over A's. */
  ratio: number
  /** The same without the optimizing compiler's. */
  restRatio: number | null
  /** The same without the compiler's and the collections': the batch's own work. */
  ownRatio: number | null
}

/** The total callgrind prints as `==pid== I   refs:      9,550,968,862`. */
export function instructionTotal (valgrindOutput: string): number {
  const m = /I\s+refs:\s+([\d,]+)/.exec(valgrindOutput)
  if (m === null) throw new Error(`callgrind printed no instruction total:\n${valgrindOutput.slice(-2000)}`)
  return Number(m[1]!.replaceAll(',', ''))
}

/** One iteration's instructions from a short and a long run of the same warm-up. */
export function perIteration (short: number, long: number, opts: InstructionOptions): number {
  return (long - short) / (opts.long - opts.short)
}

/**
 * The optimizing compiler's instructions, from `callgrind_annotate --inclusive=yes`:
 * the line of `GetOrCompileOptimized`, through which every optimized compile
 * (on entry and on-stack replacement) goes and which does not call itself.
 * Null when no line names it (another V8 may call it something else).
 */
export function compilerInstructions (annotated: string): number | null {
  const m = /^\s*([\d,]+)\s+\([\s\d.]+%\)\s+\S*?(?:\(anonymous namespace\)::)?GetOrCompileOptimized\(/m.exec(annotated)
  return m === null ? null : Number(m[1]!.replaceAll(',', ''))
}

/**
 * The stop-the-world collections' instructions, from the same listing: the
 * line of `Heap::CollectGarbage`, through which every scavenge and every
 * mark-compact's pause goes. Null when no line names it (nothing was
 * collected in the run).
 */
export function collectorInstructions (annotated: string): number | null {
  const m = /^\s*([\d,]+)\s+\([\s\d.]+%\)\s+\S*?v8::internal::Heap::CollectGarbage\(/m.exec(annotated)
  return m === null ? null : Number(m[1]!.replaceAll(',', ''))
}

/** One build's figures from its short and long run. */
export function buildInstructions (dist: string, short: RunCount, long: RunCount, opts: InstructionOptions): BuildInstructions {
  const compiler = short.compiler === null || long.compiler === null ? null : perIteration(short.compiler, long.compiler, opts)
  const total = perIteration(short.total, long.total, opts)
  const collector = perIteration(short.collector, long.collector, opts)
  const rest = compiler === null ? null : total - compiler
  return {
    dist,
    short: short.total,
    long: long.total,
    perIteration: total,
    compilerPerIteration: compiler,
    restPerIteration: rest,
    collectorPerIteration: collector,
    ownPerIteration: rest === null ? null : rest - collector
  }
}

const execFileText = promisify(execFile)

const CHILD = fileURLToPath(new URL('./instructions-child.js', import.meta.url))

/** Runs valgrind with `args`: the instruction total it printed, once the child has printed `expected` and exited cleanly. */
export async function valgrindTotal (args: readonly string[], expected: string, what: string): Promise<number> {
  return await new Promise<number>((resolvePromise, reject) => {
    const child = spawn('valgrind', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString() })
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'ENOENT' ? new Error('valgrind is not installed (Debian: apt-get install valgrind)') : err)
    })
    child.on('close', (code) => {
      if (code !== 0 || stdout.trim() !== expected) {
        reject(new Error(`${what} failed (exit ${String(code)}):\n${stderr.slice(-3000)}`))
        return
      }
      try { resolvePromise(instructionTotal(stderr)) } catch (err) { reject(err) }
    })
  })
}

/** Runs the child under callgrind: the instructions it executed, in all, in the optimizing compiler and in the collections. */
async function count (dist: string, iterations: number, opts: InstructionOptions, outFile: string): Promise<RunCount> {
  const args = [
    '--tool=callgrind',
    // V8 writes the code it runs: valgrind must see every write to it.
    '--smc-check=all-non-file',
    `--callgrind-out-file=${outFile}`,
    process.execPath,
    '--no-deprecation', '--predictable', '--predictable-gc-schedule', '--hash-seed=1', '--random-seed=1',
    CHILD, resolve(dist), String(opts.batchSize), String(opts.warmup), String(iterations)
  ]
  const total = await valgrindTotal(args, String(iterations), `the counted run of ${dist}`)
  const annotated = await execFileText('callgrind_annotate', ['--inclusive=yes', '--threshold=100', outFile], { maxBuffer: 256 * 1024 * 1024 })
  return { total, compiler: compilerInstructions(annotated.stdout), collector: collectorInstructions(annotated.stdout) ?? 0 }
}

/**
 * Counts both builds. `keep`, when given, is a folder the four callgrind
 * files are left in (`A-short.callgrind` and so on), to be read function by
 * function with callgrind_annotate; otherwise they go with a scratch folder.
 */
export async function compareInstructions (distA: string, distB: string, opts: InstructionOptions, log: (line: string) => void, keep?: string): Promise<InstructionComparison> {
  if (opts.long <= opts.short) throw new TypeError(`Expected --long (${opts.long}) to be more than --short (${opts.short})`)
  const folder = keep ?? await mkdtemp(join(tmpdir(), 'toolgate-instructions-'))
  if (keep !== undefined) await mkdir(keep, { recursive: true })
  try {
    const builds: BuildInstructions[] = []
    for (const [name, dist] of [['A', distA], ['B', distB]] as const) {
      log(`${name}: counting ${opts.warmup} + ${opts.short} and ${opts.warmup} + ${opts.long} iterations of ${opts.batchSize}-call batches under callgrind`)
      const [short, long] = await Promise.all([
        count(dist, opts.short, opts, join(folder, `${name}-short.callgrind`)),
        count(dist, opts.long, opts, join(folder, `${name}-long.callgrind`))
      ])
      builds.push(buildInstructions(dist, short, long, opts))
    }
    const [a, b] = builds as [BuildInstructions, BuildInstructions]
    const over = (x: number | null, y: number | null): number | null => x === null || y === null ? null : y / x
    return { options: opts, a, b, ratio: b.perIteration / a.perIteration, restRatio: over(a.restPerIteration, b.restPerIteration), ownRatio: over(a.ownPerIteration, b.ownPerIteration) }
  } finally {
    if (keep === undefined) await rm(folder, { recursive: true, force: true })
  }
}

export function instructionsMarkdown (c: InstructionComparison): string {
  const o = c.options
  const n = (x: number | null): string => x === null ? 'n/a' : Math.round(x).toLocaleString('en-US')
  const r = (x: number | null): string => x === null ? 'n/a' : x.toFixed(4)
  const row = (name: string, f: BuildInstructions): string =>
    `| ${name} | ${f.dist} | ${n(f.short)} | ${n(f.long)} | ${n(f.perIteration)} | ${n(f.compilerPerIteration)} | ${n(f.restPerIteration)} | ${n(f.collectorPerIteration)} | ${n(f.ownPerIteration)} |`
  return [
    `Instructions per iteration (create a run, one ${o.batchSize}-call batch, end the run), from ${o.warmup} + ${o.short} and ${o.warmup} + ${o.long} iterations under callgrind.`,
    '',
    `| build | dist | total, ${o.short} | total, ${o.long} | per iteration | optimizing compiler | the rest | of it, collections | of it, own work |`,
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    row('A', c.a),
    row('B', c.b),
    '',
    `B / A: **${r(c.ratio)}** in all, **${r(c.restRatio)}** without the optimizing compiler, **${r(c.ownRatio)}** without the compiler and the collections (the batch's own work)`
  ].join('\n')
}

async function main (): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      batch: { type: 'string', default: '1' },
      warmup: { type: 'string', default: '2000' },
      short: { type: 'string', default: '200' },
      long: { type: 'string', default: '2200' },
      keep: { type: 'string' },
      json: { type: 'boolean', default: false }
    }
  })
  if (positionals.length !== 2) throw new TypeError('Usage: instructions.js <distA> <distB> [--batch N] [--warmup N] [--short N] [--long N] [--keep DIR] [--json]')
  const opts: InstructionOptions = {
    batchSize: integerOption('batch', values.batch, 1),
    warmup: integerOption('warmup', values.warmup, 0),
    short: integerOption('short', values.short, 0),
    long: integerOption('long', values.long, 1)
  }
  const c = await compareInstructions(positionals[0]!, positionals[1]!, opts, (line) => process.stderr.write(`instructions: ${line}\n`), values.keep)
  process.stdout.write((values.json ? JSON.stringify(c, null, 2) : instructionsMarkdown(c)) + '\n')
}

// Node resolves symlinks in a module's URL but not in argv[1]: compare real paths, or a linked checkout would run nothing.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await main()
