/**
 * What each run-level rule (src/guards/) costs a batch, in instructions
 * counted by valgrind's cachegrind (no hardware counters needed):
 *
 *   node dist/bench/guard-cost.js [--sizes 1,10] [--iterations 1000]
 *     [--guards limits,loops,...] [--parallel 2] [--json]
 *
 * For each batch size, this build's service (`instructions-child.js`: a run
 * created, one batch through the engine on the memory store, the run ended,
 * a tool answering in-process) runs <iterations> times under cachegrind
 * with every guard, then with each guard left out (the engine's
 * `withoutGuards`), <parallel> processes at a time. Start-up is the same in each
 * (a guard is one object more or less), so the difference of two totals
 * over the iterations is what the guard costs a batch, on average over the
 * process's batches: its own work, and V8 compiling it. The service with
 * every guard is counted twice: the gap between the two is the noise (V8's
 * compiler and collector do not run at quite the same points), and a cost
 * below it is none that this can tell.
 */
import { realpathSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { valgrindTotal } from './instructions.js'
import { integerOption } from './options.js'

/** The registered guards, in registration order (src/guards/index.ts). */
export const GUARDS = ['limits', 'loops', 'approvals', 'write_ahead', 'retry_safety', 'tenant_key', 'arrivals'] as const

export interface GuardCostOptions {
  sizes: number[]
  iterations: number
  guards: string[]
  /** Counted processes at a time (each is one core's work; valgrind's counts do not depend on it). */
  parallel: number
}

/** One batch size's figures: instructions per iteration with every guard (twice: the noise), and without each. */
export interface SizeCost {
  size: number
  all: number
  allAgain: number
  without: Record<string, number>
  /** By guard: `all` less `without`, the guard's instructions per batch. */
  cost: Record<string, number>
}

const CHILD = fileURLToPath(new URL('./instructions-child.js', import.meta.url))
const DIST = fileURLToPath(new URL('../', import.meta.url))

/** Runs the child under cachegrind: every instruction it executed. */
async function count (size: number, warmup: number, iterations: number, without: string | undefined): Promise<number> {
  const args = [
    '--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null',
    // V8 writes the code it runs: valgrind must see every write to it.
    '--smc-check=all-non-file',
    process.execPath,
    '--no-deprecation', '--predictable', '--predictable-gc-schedule', '--hash-seed=1', '--random-seed=1',
    CHILD, DIST, String(size), String(warmup), String(iterations), ...(without === undefined ? [] : [without])
  ]
  return await valgrindTotal(args, String(iterations), `the counted run of ${size}-call batches${without === undefined ? '' : ` without ${without}`}`)
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
    const totals = await pool(variants.map((g) => async () => {
      const total = await count(size, 0, opts.iterations, g)
      log(`${size}-call batches, ${g === undefined ? 'every guard' : `without ${g}`}: ${total} instructions`)
      return total
    }), opts.parallel)
    const perBatch = (total: number | undefined): number => (total ?? 0) / opts.iterations
    const all = perBatch(totals[0])
    const without: Record<string, number> = {}
    const cost: Record<string, number> = {}
    opts.guards.forEach((g, i) => {
      without[g] = perBatch(totals[i + 1])
      cost[g] = all - without[g]
    })
    out.push({ size, all, allAgain: perBatch(totals[totals.length - 1]), without, cost })
  }
  return out
}

export function guardCostMarkdown (costs: readonly SizeCost[], opts: GuardCostOptions): string {
  const n = (x: number): string => Math.round(x).toLocaleString('en-US')
  const lines = [
    `Instructions per batch under cachegrind, over ${opts.iterations} iterations (create a run, one batch, end the run) of one process each; a guard's cost is the process with every guard less the one without it.`,
    '',
    `| guard | ${costs.map((c) => `${c.size}-call batch`).join(' | ')} |`,
    `| --- | ${costs.map(() => '---:').join(' | ')} |`,
    ...opts.guards.map((g) => `| ${g} | ${costs.map((c) => n(c.cost[g] ?? 0)).join(' | ')} |`),
    `| every guard (the whole iteration, start-up spread over it) | ${costs.map((c) => n(c.all)).join(' | ')} |`,
    `| noise: every guard counted again, less the first | ${costs.map((c) => n(c.allAgain - c.all)).join(' | ')} |`
  ]
  return lines.join('\n')
}

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '1,10' },
      iterations: { type: 'string', default: '1000' },
      parallel: { type: 'string', default: '2' },
      guards: { type: 'string', default: GUARDS.join(',') },
      json: { type: 'boolean', default: false }
    }
  })
  const opts: GuardCostOptions = {
    sizes: values.sizes.split(',').map((s) => integerOption('sizes', s, 1)),
    iterations: integerOption('iterations', values.iterations, 1),
    parallel: integerOption('parallel', values.parallel, 1),
    guards: values.guards.split(',').filter((g) => g !== '')
  }
  const costs = await guardCosts(opts, (line) => process.stderr.write(`${line}\n`))
  process.stdout.write(values.json ? `${JSON.stringify({ options: opts, costs }, null, 2)}\n` : `${guardCostMarkdown(costs, opts)}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await main()
