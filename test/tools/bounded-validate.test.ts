/**
 * Validation in bounded time (src/tools/bounded-validate.ts): toolgate's own
 * uniqueItems answers as Ajv's did, in linear time; a validation over its
 * budget (the work it did, not the time it waited for a CPU) or out of
 * stack is a failed validation, never a throw.
 */
import { performance } from 'node:perf_hooks'
import t from 'tap'
import type { ValidateFunction } from 'ajv'
import { boundedValidate } from '../../src/tools/bounded-validate.js'
import { ToolRegistry } from '../../src/tools/registry.js'

// A generous budget: these cases are about answers; the budget's own case fakes the clock.
const registry = new ToolRegistry({ allowedOrigins: null, maxValidationMs: 60_000 })
const compile = (inputSchema: Record<string, unknown>): ValidateFunction =>
  registry.compile({ name: 'look', inputSchema, executor: { url: 'http://127.0.0.1:1/look' } }).validate

t.test('uniqueItems finds equal items whatever their key order, and only equal ones', async (t) => {
  const validate = compile({ type: 'object', properties: { xs: { uniqueItems: true } } })
  t.equal(validate({ xs: [1, '1', [1], { a: 1 }, { a: '1' }, null, true] }), true, 'values of different types are distinct')
  t.equal(validate({ xs: [{ a: 1, b: [2, { c: 3 }] }, { b: [2, { c: 3 }], a: 1 }] }), false, 'key order does not matter')
  t.match(validate.errors, [{ keyword: 'uniqueItems', instancePath: '/xs', message: 'must NOT have duplicate items (items ## 0 and 1 are identical)' }])
  t.equal(validate({ xs: [[1, 2], [2, 1]] }), true, 'array order does')
  t.equal(validate({ xs: 'not an array' }), true, 'it applies to arrays only')
  t.equal(compile({ type: 'array', uniqueItems: false })([1, 1]), true, 'uniqueItems false allows repeats')
})

t.test('uniqueItems over 256 KiB of objects answers in one pass, and finds a repeat at the end', async (t) => {
  const validate = compile({ type: 'object', properties: { xs: { type: 'array', uniqueItems: true, items: { type: 'object' } } } })
  const xs = Array.from({ length: 8000 }, (_, i) => ({ id: i, tag: 'abcdefghijklmnop' }))
  // Ajv's pairwise comparison does 32 million deep comparisons here: seconds. This is one pass (speed is the bench's to check).
  const started = performance.now()
  t.equal(validate({ xs }), true)
  t.comment(`8000 distinct objects validated in ${(performance.now() - started).toFixed(1)} ms`)
  xs.push({ tag: 'abcdefghijklmnop', id: 17 })
  t.equal(validate({ xs }), false, 'and a repeat at the end is found')
})

/** A validator answering true after `work()`, in Ajv's shape. */
const validator = (work: () => void): ValidateFunction => Object.assign((() => { work(); return true }) as unknown as ValidateFunction, { errors: null })

t.test('a validation that overruns its budget fails with one error naming the setting, and no value', async (t) => {
  let clock = 0
  const clocks = { wall: () => clock, cpu: () => clock }
  const bounded = boundedValidate(validator(() => { clock += 60 }), 50, clocks)
  t.equal(bounded({ secret: 'hunter2' }), false)
  t.same(bounded.errors?.map((e) => e.message), ['validating the arguments took longer than 50 ms (TOOLGATE_MAX_VALIDATION_MS)'])
  t.notMatch(JSON.stringify(bounded.errors), /hunter2/)
  const quick = boundedValidate(validator(() => {}), 50, clocks)
  t.equal(quick({}), true, 'one within its budget passes')
})

t.test('the budget is on the work done: time spent waiting for a CPU does not count, work does whatever the wait', async (t) => {
  let wall = 0
  let cpu = 0
  const clocks = { wall: () => wall, cpu: () => cpu }
  t.equal(boundedValidate(validator(() => { wall += 400; cpu += 20 }), 50, clocks)({}), true, '400 ms on a loaded machine, 20 ms of it working: passes')
  t.equal(boundedValidate(validator(() => { wall += 400; cpu += 60 }), 50, clocks)({}), false, '60 ms of work in 400 ms: refused')
  t.equal(boundedValidate(validator(() => { wall += 20; cpu += 400 }), 50, clocks)({}), true, 'other threads of the process busy meanwhile: 20 ms of wall-clock time passes')

})

t.test('a validation held over the budget once (a collector pause, its helper threads working) passes when its second run is within it', async (t) => {
  let wall = 0
  let cpu = 0
  const clocks = { wall: () => wall, cpu: () => cpu }
  let runs = 0
  const paused = boundedValidate(validator(() => { runs++; if (runs === 1) { wall += 120; cpu += 180 } }), 50, clocks)
  t.equal(paused({}), true, 'held 120 ms once, the process busy meanwhile: the call passes')
  t.equal(runs, 2, 'after a second run')
  runs = 0
  const costly = boundedValidate(validator(() => { runs++; wall += 60; cpu += 60 }), 50, clocks)
  t.equal(costly({}), false, 'work over the budget on each run: refused')
  t.equal(runs, 2, 'after two runs, no more')
  runs = 0
  t.equal(boundedValidate(validator(() => { runs++ }), 50, clocks)({}), true)
  t.equal(runs, 1, 'a call within the budget runs once')
})

t.test('a call within the budget on the wall clock never reads the CPU clock (a system call over every thread)', async (t) => {
  let wall = 0
  let cpuReads = 0
  const clocks = { wall: () => wall, cpu: () => { cpuReads++; return 0 } }
  const quick = boundedValidate(validator(() => { wall += 10 }), 50, clocks)
  for (let i = 0; i < 3; i++) t.equal(quick({}), true)
  t.equal(cpuReads, 0, 'three calls of 10 ms: no CPU clock read')
  const slow = boundedValidate(validator(() => { wall += 80 }), 50, clocks)
  t.equal(slow({}), true, '80 ms of waiting, no work: passes')
  t.equal(cpuReads, 2, 'its second run, and only that, read the CPU clock before and after')
})

t.test('with the process\'s own clocks: a validation held up without working passes, one that works past the budget is refused', async (t) => {
  // Blocked without using a CPU, as a thread waiting for one is: 80 ms of wall-clock time, next to no CPU time.
  const blocked = boundedValidate(validator(() => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 80) }), 50)
  t.equal(blocked({}), true)
  // Working: 80 ms of CPU time, read from the process itself (no timing of the test's own).
  const spin = (): void => {
    const start = process.cpuUsage()
    for (;;) {
      const used = process.cpuUsage(start)
      if (used.user + used.system >= 80_000) return
    }
  }
  const busy = boundedValidate(validator(spin), 50)
  t.equal(busy({}), false)
  t.match(busy.errors, [{ message: /took longer than 50 ms/ }])
})

t.test('a validation that runs out of stack fails instead of throwing', async (t) => {
  const inner = Object.assign((() => { throw new RangeError('Maximum call stack size exceeded') }) as unknown as ValidateFunction, { errors: null })
  const bounded = boundedValidate(inner, 50)
  t.equal(bounded({}), false)
  t.match(bounded.errors, [{ message: /too deeply nested or too large/ }])
  const broken = boundedValidate(Object.assign((() => { throw new TypeError('a bug') }) as unknown as ValidateFunction, { errors: null }), 50)
  t.throws(() => broken({}), TypeError, 'other errors are not hidden')
})
