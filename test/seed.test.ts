import fc from 'fast-check'
import t from 'tap'
import { RUNS_VARIABLE, SEED_VARIABLE, runs, seedFrom, seeded, seededRandom } from './seed.js'

t.test('TOOLGATE_TEST_SEED sets the seed; unset or blank, a fresh one is drawn', async (t) => {
  t.equal(seedFrom({ [SEED_VARIABLE]: '42' }), 42)
  t.equal(seedFrom({ [SEED_VARIABLE]: '0' }), 0)
  t.equal(seedFrom({ [SEED_VARIABLE]: String(2 ** 31 - 1) }), 2 ** 31 - 1)
  for (const env of [{}, { [SEED_VARIABLE]: '' }, { [SEED_VARIABLE]: ' ' }]) {
    const seed = seedFrom(env)
    t.ok(Number.isSafeInteger(seed) && seed >= 0 && seed < 2 ** 31, `${JSON.stringify(env)} draws ${seed}`)
  }
})

t.test('a seed that is not a 31-bit integer is refused, naming the variable and the value', async (t) => {
  for (const bad of ['x', '1.5', '-1', String(2 ** 31), '0x10z']) {
    t.throws(() => seedFrom({ [SEED_VARIABLE]: bad }), new RegExp(`Expected \`${SEED_VARIABLE}\` to be an integer from 0 to 2147483647, got ${bad.replace('.', '\\.')}`))
  }
})

t.test('the random tests run their suite counts, and their full counts with TOOLGATE_TEST_RUNS=full', async (t) => {
  t.equal(runs(50, 400, {}), 50)
  t.equal(runs(50, 400, { [RUNS_VARIABLE]: '' }), 50)
  t.equal(runs(50, 400, { [RUNS_VARIABLE]: 'full' }), 400)
  t.throws(() => runs(50, 400, { [RUNS_VARIABLE]: 'big' }), /Expected `TOOLGATE_TEST_RUNS` to be "full" or unset, got big/)
})

t.test('the same seed draws the same values again, in fast-check and in the generator', async (t) => {
  const comments: string[] = []
  const params = seeded({ comment: (m) => comments.push(m) }, { numRuns: 20 })
  t.match(comments, [/^random seed \d+ \(replay with TOOLGATE_TEST_SEED=\d+\)$/])
  t.equal(params.numRuns, 20)
  const arb = fc.array(fc.integer(), { maxLength: 5 })
  t.same(fc.sample(arb, params), fc.sample(arb, params))
  const a = seededRandom(7)
  const b = seededRandom(7)
  const drawn = Array.from({ length: 100 }, () => a())
  t.same(drawn, Array.from({ length: 100 }, () => b()))
  t.ok(drawn.every((x) => x >= 0 && x < 1))
  t.not(seededRandom(8)(), drawn[0], 'another seed draws other values')
})

t.test('a failing property names the seed it ran with, and the seed replays the same counterexample', async (t) => {
  const property = fc.property(fc.integer(), (n) => n < 1000)
  const first = fc.check(property, { seed: 1234 })
  const again = fc.check(property, { seed: 1234 })
  t.equal(first.failed, true)
  t.equal(first.seed, 1234)
  t.same(again.counterexample, first.counterexample)
})
