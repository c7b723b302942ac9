/**
 * `instructions.js`: two builds compared by instructions counted under
 * callgrind. The counted runs take minutes under valgrind, so the suite
 * holds the parts that can go wrong without it: reading callgrind's total
 * and the optimizing compiler's and the collections' shares, the
 * per-iteration arithmetic, the child that drives a build (run here without
 * valgrind), and a clear error where valgrind is missing.
 */
import { join } from 'node:path'
import t from 'tap'
import { buildInstructions, collectorInstructions, compareInstructions, compilerInstructions, instructionTotal, perIteration } from '../../bench/instructions.js'
import { benchTree, runNode } from './scratch.js'

t.test("callgrind's instruction total is read from its summary line", async (t) => {
  const out = '==4242== Events    : Ir\n==4242== Collected : 9550968862\n==4242== \n==4242== I   refs:      9,550,968,862\n'
  t.equal(instructionTotal(out), 9_550_968_862)
  t.throws(() => instructionTotal('==1== ERROR SUMMARY: 0 errors'), /no instruction total/)
})

t.test('one iteration is the difference of two runs over the difference of their iterations', async (t) => {
  const opts = { batchSize: 1, warmup: 300, short: 100, long: 600 }
  t.equal(perIteration(9_506_447_920, 11_689_999_722, opts), (11_689_999_722 - 9_506_447_920) / 500)
})

t.test("the optimizing compiler's instructions are read from callgrind_annotate's inclusive listing", async (t) => {
  const listing = [
    '--------------------------------------------------------------------------------',
    'Ir                      file:function',
    '--------------------------------------------------------------------------------',
    '14,528,613,617 (100.0%)  ???:0x0000000000a1b2c0 [/usr/bin/node]',
    // Its caller's inclusive cost holds it and more: not the figure.
    '6,000,000,000 (41.30%)  ???:v8::internal::Runtime_CompileOptimized(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]',
    ' 5,599,011,238 (38.54%)  ???:v8::internal::(anonymous namespace)::GetOrCompileOptimized(v8::internal::Isolate*, v8::internal::Handle<v8::internal::JSFunction>, v8::internal::ConcurrencyMode) [/usr/bin/node]',
    '   953,379,992 ( 6.56%)  ???:v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace) [/usr/bin/node]'
  ].join('\n')
  t.equal(compilerInstructions(listing), 5_599_011_238)
  t.equal(compilerInstructions(listing.replace('(anonymous namespace)::', '')), 5_599_011_238, 'a build that names it without the namespace')
  t.equal(compilerInstructions('14,528,613,617 (100.0%)  PROGRAM TOTALS'), null, 'null where no line names it')
  t.equal(collectorInstructions(listing), 953_379_992, "the collections' from Heap::CollectGarbage's line")
  t.equal(collectorInstructions('14,528,613,617 (100.0%)  PROGRAM TOTALS'), null, 'null where nothing was collected')
})

t.test("a build's figures: per iteration in all, the compiler's share, the rest, the collections' share of it and the own work", async (t) => {
  const opts = { batchSize: 10, warmup: 2000, short: 200, long: 2200 }
  const f = buildInstructions('dist', { total: 10_000_000_000, compiler: 1_000_000_000, collector: 300_000_000 }, { total: 22_000_000_000, compiler: 1_400_000_000, collector: 900_000_000 }, opts)
  t.same(f, { dist: 'dist', short: 10_000_000_000, long: 22_000_000_000, perIteration: 6_000_000, compilerPerIteration: 200_000, restPerIteration: 5_800_000, collectorPerIteration: 300_000, ownPerIteration: 5_500_000 })
  const unknown = buildInstructions('dist', { total: 10_000_000_000, compiler: null, collector: 0 }, { total: 22_000_000_000, compiler: 1_400_000_000, collector: 0 }, opts)
  t.equal(unknown.perIteration, 6_000_000)
  t.equal(unknown.compilerPerIteration, null, 'no share when either run lacks it')
  t.equal(unknown.restPerIteration, null)
  t.equal(unknown.ownPerIteration, null)
  t.equal(unknown.collectorPerIteration, 0, 'no collection in either run: none per iteration')
})

t.test('the child drives a build through inject with an in-process executor, and says how many iterations it did', async (t) => {
  const out = benchTree()
  const ok = await runNode([join(out, 'bench', 'instructions-child.js'), out, '3', '2', '5'], 60_000)
  t.equal(ok.code, 0, `it exits cleanly${ok.code === 0 ? '' : `: ${ok.stderr.slice(-2000)}`}`)
  t.equal(ok.stdout, '5\n')
  const bad = await runNode([join(out, 'bench', 'instructions-child.js'), out, '0', '1', '1'], 60_000)
  t.not(bad.code, 0, 'a batch of no calls is refused')
  t.match(bad.stderr, /Usage: instructions-child\.js/)
})

t.test('without valgrind on the PATH the comparison says so', async (t) => {
  const path = process.env.PATH
  process.env.PATH = '/nonexistent'
  t.teardown(() => { process.env.PATH = path })
  await t.rejects(compareInstructions('a', 'b', { batchSize: 1, warmup: 0, short: 1, long: 2 }, () => {}), /valgrind is not installed/)
  await t.rejects(compareInstructions('a', 'b', { batchSize: 1, warmup: 0, short: 2, long: 2 }, () => {}), /--long \(2\) to be more than --short \(2\)/)
})
