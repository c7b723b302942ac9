/**
 * `npm run bench -- --profile DIR --smoke`: the profiler runs, profiles every
 * service at both batch sizes and names where the CPU went; never a timing.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { REDIS_URL } from '../store/harness.js'
import { benchTree, runNode, scratchDir } from './scratch.js'

t.test('the profiler profiles the floor and toolgate on each store and says where each one\'s CPU per batch went', async (t) => {
  const out = benchTree()
  const profiles = join(await scratchDir(t), 'profiles')
  // A database of its own: the bench flushes its database before and after, and the smoke test's bench may run meanwhile.
  const run = await runNode([join(out, 'bench', 'run.js'), '--smoke', '--profile', profiles], 100_000, { TOOLGATE_BENCH_REDIS: `${REDIS_URL}/6` })
  t.equal(run.code, 0, `the profiler exits cleanly${run.code === 0 ? '' : `: ${run.stderr.slice(-2000)}`}`)
  // Main threads only: under the test runner's module hooks a process may write a profile per thread.
  const written = (await readdir(profiles)).filter((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f))
  t.equal(written.length, 6, `a profile per service and batch size: the floor, toolgate on memory and on Redis (which the suite has), each at 1 and 10 calls (${written.join(', ')})`)
  for (const size of [1, 10]) {
    t.match(run.stdout, `### ${size}-call batches`, `a section for ${size}-call batches`)
    t.match(run.stdout, `| ${size}-call batches, µs per batch | floor | toolgate | toolgate on Redis |`, 'one column per service')
  }
  const cpuRows = run.stdout.split('\n').filter((l) => l.startsWith('| **CPU per batch**'))
  t.equal(cpuRows.length, 2)
  for (const row of cpuRows) {
    const figures = [...row.matchAll(/\*\*(\d+)\*\*/g)].map((m) => Number(m[1]))
    t.equal(figures.length, 3, 'a CPU figure per service')
    t.ok(figures.every((f) => f > 0), 'every service used CPU')
  }
  t.match(run.stdout, /\| src\/batch\/[\w-]+\.[jt]s \|/, "toolgate's own files are named")
  for (const service of ['floor', 'toolgate', 'toolgate on Redis']) {
    for (const size of [1, 10]) t.match(run.stdout, `### ${service}, ${size}-call batches (`, `the detail of ${service} at ${size} calls`)
  }
})
