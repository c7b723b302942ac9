import fc from 'fast-check'
import { Counter, Registry } from 'prom-client'
import t from 'tap'
import { FastCounter } from '../../src/telemetry/counter.js'

t.test('exports exactly what a prom-client Counter exports for the same counts, text and JSON', async (t) => {
  const count = fc.record({ tool: fc.constantFrom('look', 'build', 'paint "quoted"\\'), status: fc.constantFrom('ok', 'error'), n: fc.integer({ min: 0, max: 5 }) })
  await fc.assert(fc.asyncProperty(fc.array(count, { maxLength: 40 }), async (counts) => {
    const fastRegistry = new Registry()
    const promRegistry = new Registry()
    const config = { name: 'x_total', help: 'Some help.' }
    const fast = new FastCounter({ ...config, labelNames: ['tool', 'status'], registers: [fastRegistry] })
    const prom = new Counter({ ...config, labelNames: ['tool', 'status'], registers: [promRegistry] })
    const plainFast = new FastCounter({ name: 'y_total', help: 'Plain.', registers: [fastRegistry] })
    const plainProm = new Counter({ name: 'y_total', help: 'Plain.', registers: [promRegistry] })
    for (const { tool, status, n } of counts) {
      fast.inc([tool, status], n)
      prom.inc({ tool, status }, n)
      plainFast.inc([], n)
      plainProm.inc(n)
    }
    t.equal(await fastRegistry.metrics(), await promRegistry.metrics())
    t.same(await fastRegistry.getMetricsAsJSON(), await promRegistry.getMetricsAsJSON())
  }), { numRuns: 50 })
})

t.test('a zeroed series is exported at 0; dropZeros removes only series still at 0', async (t) => {
  const registry = new Registry()
  const c = new FastCounter({ name: 'z_total', help: 'Z.', labelNames: ['tool'], registers: [registry] })
  c.zero(['a'])
  c.zero(['b'])
  c.inc(['b'])
  t.match(await registry.metrics(), /z_total\{tool="a"\} 0\nz_total\{tool="b"\} 1/)
  c.dropZeros(() => true)
  t.equal(c.valueOf(['b']), 1)
  t.notMatch(await registry.metrics(), /tool="a"/)
})

t.test('the wrong number of label values is refused with a message naming the metric', async (t) => {
  const c = new FastCounter({ name: 'w_total', help: 'W.', labelNames: ['tool', 'status'], registers: [new Registry()] })
  t.throws(() => { c.inc(['only']) }, { name: 'TypeError', message: 'w_total takes 2 label values, got 1' })
})
