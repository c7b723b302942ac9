/**
 * Validation in bounded time (src/tools/bounded-validate.ts): toolgate's own
 * uniqueItems answers as Ajv's did, in linear time; a validation over its
 * budget (the work it did, not the time it waited for a CPU) or out of
 * stack is a failed validation, never a throw.
 */
import { performance } from 'node:perf_hooks'
import t from 'tap'
import type { ValidateFunction } from 'ajv'
import { boundedValidate, boundedValidator, overBudget, type Validation } from '../../src/tools/bounded-validate.js'
import { ToolRegistry } from '../../src/tools/registry.js'

// A generous budget: these cases are about answers; the budget's own case fakes the clock.
const registry = new ToolRegistry({ allowedOrigins: null, maxValidationMs: 60_000 })
t.teardown(async () => { await registry.close() })
/** The tool's validator, answering true or false and keeping the last errors, as Ajv's. */
const compile = (inputSchema: Record<string, unknown>): ((data: unknown) => Promise<boolean>) & { errors: unknown } => {
  const validate = registry.compile({ name: 'look', inputSchema, executor: { url: 'http://127.0.0.1:1/look' } }).validate
  const answer = Object.assign(async (data: unknown) => {
    const verdict = await validate(data)
    answer.errors = verdict.valid ? null : verdict.errors
    return verdict.valid
  }, { errors: null as unknown })
  return answer
}

t.test('uniqueItems finds equal items whatever their key order, and only equal ones', async (t) => {
  const validate = compile({ type: 'object', properties: { xs: { uniqueItems: true } } })
  t.equal(await validate({ xs: [1, '1', [1], { a: 1 }, { a: '1' }, null, true] }), true, 'values of different types are distinct')
  t.equal(await validate({ xs: [{ a: 1, b: [2, { c: 3 }] }, { b: [2, { c: 3 }], a: 1 }] }), false, 'key order does not matter')
  t.match(validate.errors, [{ keyword: 'uniqueItems', instancePath: '/xs', message: 'must NOT have duplicate items (items ## 0 and 1 are identical)' }])
  t.equal(await validate({ xs: [[1, 2], [2, 1]] }), true, 'array order does')
  t.equal(await validate({ xs: 'not an array' }), true, 'it applies to arrays only')
  t.equal(await compile({ type: 'array', uniqueItems: false })([1, 1]), true, 'uniqueItems false allows repeats')
})

t.test('uniqueItems over 256 KiB of objects answers in one pass, and finds a repeat at the end', async (t) => {
  const validate = compile({ type: 'object', properties: { xs: { type: 'array', uniqueItems: true, items: { type: 'object' } } } })
  const xs = Array.from({ length: 8000 }, (_, i) => ({ id: i, tag: 'abcdefghijklmnop' }))
  // Ajv's pairwise comparison does 32 million deep comparisons here: seconds. This is one pass (speed is the bench's to check).
  const started = performance.now()
  t.equal(await validate({ xs }), true)
  t.comment(`8000 distinct objects validated in ${(performance.now() - started).toFixed(1)} ms`)
  xs.push({ tag: 'abcdefghijklmnop', id: 17 })
  t.equal(await validate({ xs }), false, 'and a repeat at the end is found')
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

t.test('a call held over the budget in the event loop is not run there again: the validation thread\'s verdict stands', async (t) => {
  let wall = 0
  let cpuReads = 0
  const clocks = { wall: () => wall, cpu: () => { cpuReads++; return 0 } }
  let runs = 0
  const sent: unknown[] = []
  const runner = { validate: async (_key: number, _schema: unknown, data: unknown, maxMs: number): Promise<Validation> => { sent.push(data); return data === 'costly' ? overBudget(maxMs) : { valid: true, value: data } } }
  const held = boundedValidator(validator(() => { runs++; wall += 120 }), { schema: {}, weight: 1, maxMs: 50, runner, clocks })
  const verdict = held('waited')
  t.ok(verdict instanceof Promise, 'held 120 ms: the thread decides')
  t.same(await verdict, { valid: true, value: 'waited' }, 'and it passes there')
  t.match(await held('costly'), { valid: false, errors: [{ message: /took longer than 50 ms/ }] }, 'or is refused there')
  t.equal(runs, 2, 'each ran once here, not twice')
  t.same(sent, ['waited', 'costly'])
  const quick = boundedValidator(validator(() => { wall += 10 }), { schema: {}, weight: 1, maxMs: 50, runner, clocks })
  for (let i = 0; i < 3; i++) t.same(quick({}), { valid: true, value: {} }, 'a call within the budget answers at once')
  t.equal(cpuReads, 0, 'no CPU clock read here')
})

t.test('a call whose weight times size is over the bound goes to the validation thread without running here', async (t) => {
  let runs = 0
  const sent: unknown[] = []
  const runner = { validate: async (_key: number, _schema: unknown, data: unknown): Promise<Validation> => { sent.push(data); return { valid: true, value: data } } }
  const light = boundedValidator(validator(() => { runs++ }), { schema: {}, weight: 10, maxMs: 50, runner })
  t.notOk(light({ xs: ['a', 'b'] }) instanceof Promise, 'small arguments of a light schema: here')
  t.ok(light({ xs: 'x'.repeat(40_000) }) instanceof Promise, '40 KB of arguments: on the thread')
  const heavy = boundedValidator(validator(() => { runs++ }), { schema: {}, weight: 200_000, maxMs: 50, runner })
  t.ok(heavy({ xs: ['a', 'b', 'c', 'd', 'e', 'f'] }) instanceof Promise, 'a schema of 200,000 enum values: a few bytes go to the thread')
  const recursive = boundedValidator(validator(() => { runs++ }), { schema: {}, weight: Infinity, maxMs: 50, runner })
  t.ok(recursive({}) instanceof Promise, 'a schema whose weight is unbounded: always on the thread')
  t.equal(runs, 1, 'only the first ran here')
  t.equal(sent.length, 3)
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
