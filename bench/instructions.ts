/**
 * Two builds compared by the instructions a batch executes, counted by
 * valgrind's callgrind: a figure no other process on the machine can move,
 * for changes too small for `compare.js`'s timings to tell from noise.
 *
 *   node dist/bench/instructions.js <distA> <distB> [--batch 1] [--warmup 300]
 *     [--short 100] [--long 600] [--json]
 *
 * Each build runs `instructions-child.js` (this build's, loading the other
 * build's service) twice under callgrind, with <warmup> + <short> and
 * <warmup> + <long> iterations (create a run, one batch, end the run); the
 * difference of the two totals over the difference of the iterations is one
 * iteration's instructions, start-up and warm-up cancelled out. Node runs
 * with `--predictable` and fixed hash and random seeds, the tool answers
 * in-process and requests go through `inject`, so two runs of one build
 * agree within about 0.2% of their totals. What this does not see:
 * sockets, the HTTP executor, and time the same instructions take longer
 * (cache misses, a busy machine). Two runs go at a time; a pair at the
 * defaults takes some ten minutes on 2 cores.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { integerOption } from './options.js'

export interface InstructionOptions {
  batchSize: number
  warmup: number
  short: number
  long: number
}

export interface BuildInstructions {
  dist: string
  /** Total instructions of the short and the long run. */
  short: number
  long: number
  perIteration: number
}

export interface InstructionComparison {
  options: InstructionOptions
  a: BuildInstructions
  b: BuildInstructions
  /** B's instructions per iteration over A's. */
  ratio: number
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

const CHILD = fileURLToPath(new URL('./instructions-child.js', import.meta.url))

/** Runs the child under callgrind: the instructions it executed in all. */
async function count (dist: string, iterations: number, opts: InstructionOptions, scratch: string): Promise<number> {
  const args = [
    '--tool=callgrind',
    // V8 writes the code it runs: valgrind must see every write to it.
    '--smc-check=all-non-file',
    `--callgrind-out-file=${join(scratch, 'callgrind.%p')}`,
    process.execPath,
    '--no-deprecation', '--predictable', '--predictable-gc-schedule', '--expose-gc', '--hash-seed=1', '--random-seed=1',
    CHILD, resolve(dist), String(opts.batchSize), String(opts.warmup), String(iterations)
  ]
  return await new Promise((resolvePromise, reject) => {
    const child = spawn('valgrind', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString() })
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'ENOENT' ? new Error('valgrind is not installed (Debian: apt-get install valgrind)') : err)
    })
    child.on('close', (code) => {
      if (code !== 0 || stdout.trim() !== String(iterations)) {
        reject(new Error(`the counted run of ${dist} failed (exit ${String(code)}):\n${stderr.slice(-3000)}`))
        return
      }
      try { resolvePromise(instructionTotal(stderr)) } catch (err) { reject(err) }
    })
  })
}

export async function compareInstructions (distA: string, distB: string, opts: InstructionOptions, log: (line: string) => void): Promise<InstructionComparison> {
  if (opts.long <= opts.short) throw new TypeError(`Expected --long (${opts.long}) to be more than --short (${opts.short})`)
  const scratch = await mkdtemp(join(tmpdir(), 'toolgate-instructions-'))
  try {
    const builds: BuildInstructions[] = []
    for (const [name, dist] of [['A', distA], ['B', distB]] as const) {
      log(`${name}: counting ${opts.warmup} + ${opts.short} and ${opts.warmup} + ${opts.long} iterations of ${opts.batchSize}-call batches under callgrind`)
      const [short, long] = await Promise.all([count(dist, opts.short, opts, scratch), count(dist, opts.long, opts, scratch)])
      builds.push({ dist, short, long, perIteration: perIteration(short, long, opts) })
    }
    const [a, b] = builds as [BuildInstructions, BuildInstructions]
    return { options: opts, a, b, ratio: b.perIteration / a.perIteration }
  } finally {
    await rm(scratch, { recursive: true, force: true })
  }
}

export function instructionsMarkdown (c: InstructionComparison): string {
  const o = c.options
  const n = (x: number): string => Math.round(x).toLocaleString('en-US')
  const row = (name: string, f: BuildInstructions): string => `| ${name} | ${f.dist} | ${n(f.short)} | ${n(f.long)} | ${n(f.perIteration)} |`
  return [
    `Instructions per iteration (create a run, one ${o.batchSize}-call batch, end the run), from ${o.warmup} + ${o.short} and ${o.warmup} + ${o.long} iterations under callgrind.`,
    '',
    `| build | dist | total, ${o.short} | total, ${o.long} | per iteration |`,
    '| --- | --- | ---: | ---: | ---: |',
    row('A', c.a),
    row('B', c.b),
    '',
    `B / A: **${c.ratio.toFixed(4)}**`
  ].join('\n')
}

async function main (): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      batch: { type: 'string', default: '1' },
      warmup: { type: 'string', default: '300' },
      short: { type: 'string', default: '100' },
      long: { type: 'string', default: '600' },
      json: { type: 'boolean', default: false }
    }
  })
  if (positionals.length !== 2) throw new TypeError('Usage: instructions.js <distA> <distB> [--batch N] [--warmup N] [--short N] [--long N] [--json]')
  const opts: InstructionOptions = {
    batchSize: integerOption('batch', values.batch, 1),
    warmup: integerOption('warmup', values.warmup, 0),
    short: integerOption('short', values.short, 0),
    long: integerOption('long', values.long, 1)
  }
  const c = await compareInstructions(positionals[0]!, positionals[1]!, opts, (line) => process.stderr.write(`instructions: ${line}\n`))
  process.stdout.write((values.json ? JSON.stringify(c, null, 2) : instructionsMarkdown(c)) + '\n')
}

// Node resolves symlinks in a module's URL but not in argv[1]: compare real paths, or a linked checkout would run nothing.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await main()
