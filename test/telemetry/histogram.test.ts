import fc from 'fast-check'
import { Histogram, Registry } from 'prom-client'
import t from 'tap'
import { FastHistogram } from '../../src/telemetry/histogram.js'
import { seeded } from '../seed.js'

const BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** The same observations into a FastHistogram and a prom-client Histogram, each in its own registry. */
function pair (labelName?: string): { fast: FastHistogram, fastRegistry: Registry, prom: Histogram, promRegistry: Registry } {
  const fastRegistry = new Registry()
  const promRegistry = new Registry()
  const config = { name: 'x_seconds', help: 'Some help.', buckets: BUCKETS }
  const fast = new FastHistogram({ ...config, ...(labelName === undefined ? {} : { labelName }), registers: [fastRegistry] })
  const prom = new Histogram({ ...config, labelNames: labelName === undefined ? [] : [labelName], registers: [promRegistry] })
  return { fast, fastRegistry, prom, promRegistry }
}

/** prom-client's JSON carries an empty `exemplar` on each value; exemplars are not used here. */
function withoutExemplars (metrics: Array<{ values: unknown[] }>): unknown {
  return metrics.map((m) => ({ ...m, values: m.values.map((v) => { const { exemplar: _, ...rest } = v as Record<string, unknown>; return rest }) }))
}

t.test('exports exactly what a prom-client Histogram exports for the same observations, text and JSON', async (t) => {
  const observation = fc.record({
    tool: fc.constantFrom('look', 'build', 'paint "quoted"\\'),
    value: fc.oneof(fc.double({ min: 0, max: 120, noNaN: true }), fc.constantFrom(...BUCKETS), fc.constant(1e9))
  })
  await fc.assert(fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
    const labelled = pair('tool')
    const plain = pair()
    for (const { tool, value } of observations) {
      labelled.fast.observe(value, tool)
      labelled.prom.observe({ tool }, value)
      plain.fast.observe(value)
      plain.prom.observe(value)
    }
    for (const p of [labelled, plain]) {
      t.equal(await p.fastRegistry.metrics(), await p.promRegistry.metrics())
      t.same(await p.fastRegistry.getMetricsAsJSON(), withoutExemplars(await p.promRegistry.getMetricsAsJSON()))
    }
  }), seeded(t, { numRuns: 100 }))
})

t.test('reset empties it as prom-client does, the unlabelled series too, and observing after it starts again', async (t) => {
  for (const label of ['tool', undefined]) {
    const p = pair(label)
    p.fast.observe(0.3, 'look')
    if (label === undefined) p.prom.observe(0.3)
    else p.prom.observe({ tool: 'look' }, 0.3)
    p.fastRegistry.resetMetrics()
    p.promRegistry.resetMetrics()
    t.equal(await p.fastRegistry.metrics(), await p.promRegistry.metrics(), `label ${String(label)}`)
    p.fast.observe(0.004, 'look')
    if (label === undefined) p.prom.observe(0.004)
    else p.prom.observe({ tool: 'look' }, 0.004)
    t.equal(await p.fastRegistry.metrics(), await p.promRegistry.metrics(), `label ${String(label)}, observed again`)
  }
})

t.test('an unlabelled histogram ignores a label value given to observe: one series', async (t) => {
  const { fast, fastRegistry } = pair()
  fast.observe(0.003, 'look')
  fast.observe(0.004, 'poke')
  fast.observe(0.2)
  t.match(await fastRegistry.metrics(), /^x_seconds_count 3$/m)
  t.notMatch(await fastRegistry.metrics(), /look|poke/)
})

t.test('refuses a value that is not a finite number, as prom-client does', async (t) => {
  const { fast } = pair('tool')
  t.throws(() => fast.observe(Number.NaN, 'look'), TypeError)
  t.throws(() => fast.observe(Number.POSITIVE_INFINITY, 'look'), TypeError)
})
