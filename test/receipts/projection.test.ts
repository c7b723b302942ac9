import t from 'tap'
import {
  checkProjectedValue,
  compileProjection,
  projectReceipt
} from '../../src/receipts/projection.js'

// SPEC section 2 (the tool example) and section 7 (the canonical receipt).
const SPEC_PROJECTION = "{ 'action': intent.action, 'status': $lowercase(receipt.status), 'label': receipt.result.label }"
const intent = { action: 'build', arguments: { kind: 'wall', x: 1, y: 2 } }
const receipt = {
  operationId: 'op_1',
  runId: 'r1',
  batchId: 'b1',
  callId: 'call_2',
  tool: 'build',
  intent,
  status: 'committed',
  result: { label: 'Wall #12', reward: 5 },
  stateRevision: 42,
  timeline: [
    { event: 'prepared', at: '2025-01-01T00:00:00.000Z' },
    { event: 'dispatched', at: '2025-01-01T00:00:00.001Z' },
    { event: 'responded', at: '2025-01-01T00:00:00.013Z' }
  ]
}
const input = { intent, receipt }
const MAX = 4096

// The time box is wall-clock; tests that are not about it widen it so a
// loaded machine cannot turn an expected success into a timeout.
const RELAXED = { timeoutMs: 10_000 }
const compile = (source: string) => compileProjection(source, RELAXED)
const project = async (source: string, maxChars = MAX, value = input) =>
  projectReceipt(compile(source), value, maxChars)

t.test("the SPEC's example projection gives the model a small object", async t => {
  const expected = { ok: true, content: '{"action":"build","status":"committed","label":"Wall #12"}' }
  t.same(await project(SPEC_PROJECTION), expected)
})

t.test('the same input projects byte-identically twice, and the input is untouched', async t => {
  const source = "{ 'r': receipt, 'keys': $keys(receipt), 'sorted': $sort(receipt.timeline, function($a, $b) { $a.at < $b.at }).event }"
  const projection = compile(source)
  const before = structuredClone(input)
  const first = await projectReceipt(projection, input, MAX)
  const second = await projectReceipt(projection, input, MAX)
  t.equal(first.ok, true)
  t.same(first, second)
  t.same(input, before)
})

t.test('dispatch and timing never reach the projection, so a replay projects like the first dispatch', async t => {
  const projection = compile("{ 'keys': $keys(receipt), 'status': receipt.status }")
  const first = { ...receipt, dispatch: { disposition: 'dispatched', attempts: 1 }, timing: { durationMs: 12.5 } }
  const replay = { ...receipt, dispatch: { disposition: 'replayed', attempts: 0 }, timing: { durationMs: 0.1 } }
  const a = await projectReceipt(projection, { intent, receipt: first }, MAX)
  const b = await projectReceipt(projection, { intent, receipt: replay }, MAX)
  t.same(a, b)
  t.notMatch(a.ok ? a.content : '', /dispatch|timing/)
})

t.test('every way a projection can fail', async t => {
  const cases: Array<[string, string, string]> = [
    ['an expression that throws', "$error('boom')", 'threw'],
    ['a call of an unknown function', '$nope()', 'threw'],
    ['$now', "{ 'at': $now() }", 'threw'],
    ['$millis', "{ 'at': $millis() }", 'threw'],
    ['$random', "{ 'r': $random() }", 'threw'],
    ['$shuffle', "{ 's': $shuffle([1, 2, 3]) }", 'threw'],
    ['$now through $eval', "{ 'at': $eval('$now()') }", 'threw'],
    ['undefined', 'receipt.nothing.here', 'not_an_object'],
    ['null', 'null', 'not_an_object'],
    ['an array', '[receipt.status]', 'not_an_object'],
    ['an array of one object', "[{ 'a': 1 }]", 'not_an_object'],
    ['a string', 'receipt.status', 'not_an_object'],
    ['a number', 'receipt.stateRevision', 'not_an_object'],
    ['a boolean', 'true', 'not_an_object'],
    ['a function', 'function($x) { $x }', 'not_an_object'],
    ['a non-finite number (1/0 is Infinity in jsonata 2)', "{ 'x': 1 / 0 }", 'not_json'],
    ['an overflowing number', "{ 'x': 1e308 * 10 }", 'not_json'],
    ['a lambda inside the object', "{ 'f': function($x) { $x } }", 'not_json'],
    ['a built-in function inside the object', "{ 'f': $string }", 'not_json'],
    ['an object over the limit', "{ 'pad': $pad('', 5000, 'x') }", 'too_long']
  ]
  for (const [name, source, problem] of cases) {
    t.same(await project(source), { ok: false, problem }, name)
  }
})

t.test('an object exactly at the limit passes and one character more fails', async t => {
  const projection = compile("{ 'label': receipt.result.label }")
  const content = '{"label":"Wall #12"}'
  t.same(await projectReceipt(projection, input, content.length), { ok: true, content })
  t.same(await projectReceipt(projection, input, content.length - 1), { ok: false, problem: 'too_long' })
  const longer = { intent, receipt: { ...receipt, result: { label: 'Wall #123' } } }
  t.same(await projectReceipt(projection, longer, content.length), { ok: false, problem: 'too_long' })
})

t.test('the limit counts the escaped serialization', async t => {
  const value = { s: '"\n' }
  const content = JSON.stringify(value) // {"s":"\"\n"}
  t.equal(content.length, 12)
  t.same(checkProjectedValue(value, 12), { ok: true, content })
  t.same(checkProjectedValue(value, 11), { ok: false, problem: 'too_long' })
})

t.test('checkProjectedValue accepts plain JSON objects only', async t => {
  const sequence = Object.assign([1, 2], { sequence: true })
  const shared = { x: 1 }
  const accepted: Array<[string, unknown, string]> = [
    ['an empty object', {}, '{}'],
    ['nested values of every JSON kind', { a: [null, true, false, 1.5, 's', { b: [] }] }, '{"a":[null,true,false,1.5,"s",{"b":[]}]}'],
    ['a null-prototype object (what jsonata builds)', Object.assign(Object.create(null) as object, { a: 1 }), '{"a":1}'],
    ['a jsonata sequence', { a: sequence }, '{"a":[1,2]}'],
    ['a shared (not cyclic) reference', { a: shared, b: shared }, '{"a":{"x":1},"b":{"x":1}}'],
    ['negative zero', { z: -0 }, '{"z":0}']
  ]
  for (const [name, value, content] of accepted) {
    t.same(checkProjectedValue(value, MAX), { ok: true, content }, name)
  }

  const cycle: Record<string, unknown> = {}
  cycle.self = { again: cycle }
  const rejected: Array<[string, unknown, string]> = [
    ['undefined', undefined, 'not_an_object'],
    ['null', null, 'not_an_object'],
    ['an array', [{}], 'not_an_object'],
    ['a string', '{}', 'not_an_object'],
    ['a number', 1, 'not_an_object'],
    ['a boolean', false, 'not_an_object'],
    ['a Date', new Date(0), 'not_an_object'],
    ['a Map', new Map(), 'not_an_object'],
    ['Infinity', { x: Infinity }, 'not_json'],
    ['-Infinity', { x: [-Infinity] }, 'not_json'],
    ['NaN', { x: Number.NaN }, 'not_json'],
    ['undefined in an object', { x: undefined }, 'not_json'],
    ['undefined in an array', { x: [1, undefined] }, 'not_json'],
    ['an array hole', { x: [1, , 2] }, 'not_json'], // eslint-disable-line no-sparse-arrays
    ['a function', { f: () => 1 }, 'not_json'],
    ['a symbol', { s: Symbol('s') }, 'not_json'],
    ['a BigInt', { n: 1n }, 'not_json'],
    ['a nested Date', { d: new Date(0) }, 'not_json'],
    ['a class instance', { p: new (class Point { x = 1 })() }, 'not_json'],
    ['a jsonata marker', { f: { _jsonata_lambda: true } }, 'not_json'],
    ['a cycle', cycle, 'not_json'],
    ['an object over the limit', { s: 'x'.repeat(MAX) }, 'too_long']
  ]
  for (const [name, value, problem] of rejected) {
    t.same(checkProjectedValue(value, MAX), { ok: false, problem }, name)
  }
})

t.test('a huge value is refused without stringifying it whole', async t => {
  const leaf = { s: 'x'.repeat(100) }
  let level: Record<string, unknown> = leaf
  // 2**40 leaves once expanded: only a walk that stops early can answer.
  for (let i = 0; i < 40; i++) level = { a: level, b: level }
  t.same(checkProjectedValue(level, MAX), { ok: false, problem: 'too_long' })
})

t.test('a deeply nested value does not overflow the stack', async t => {
  let deep: unknown = {}
  for (let i = 0; i < 100_000; i++) deep = { d: deep }
  t.same(checkProjectedValue(deep, 100), { ok: false, problem: 'too_long' })
})

t.test('a bad maxChars is a programming error', async t => {
  t.throws(() => checkProjectedValue({}, -1), TypeError)
  t.throws(() => checkProjectedValue({}, 1.5), TypeError)
})

t.test('an expression that does not parse fails to compile with its code and position', async t => {
  const cases: Array<[string, RegExp]> = [
    ["{ 'a': ", /^Invalid projection: S0203 .* at position 7$/],
    ['[1, 2', /^Invalid projection: S0203 Expected "]" before end of expression at position 5$/],
    ['', /^Invalid projection: S0207 /],
    ['receipt..status', /^Invalid projection: S\d{4} /]
  ]
  for (const [source, message] of cases) {
    t.throws(() => compileProjection(source), { message }, JSON.stringify(source))
  }
})

t.test('compile options must be positive integers', async t => {
  for (const opts of [{ timeoutMs: 0 }, { timeoutMs: -5 }, { maxDepth: 1.5 }, { maxDepth: Number.NaN }]) {
    t.throws(() => compileProjection('{}', opts), TypeError, JSON.stringify(opts))
  }
})

t.test('a compiled projection keeps its source', async t => {
  t.equal(compileProjection(SPEC_PROJECTION).source, SPEC_PROJECTION)
})

// D1012 is jsonata's own time-box error (D1011 its depth limit): the code says which bound stopped it, no stopwatch needed.
t.test('infinite tail recursion fails at the time box', async t => {
  const projection = compileProjection("($f := function($n) { $f($n + 1) }; { 'n': $f(0) })")
  await t.rejects(projection.evaluate(input, MAX), { message: /D1012/ })
  t.same(await projectReceipt(projection, input, MAX), { ok: false, problem: 'threw' })
})

t.test('a shorter time box is honoured', async t => {
  const projection = compileProjection("($f := function($n) { $f($n + 1) }; { 'n': $f(0) })", { timeoutMs: 20 })
  await t.rejects(projection.evaluate(input, MAX), { message: /D1012/ })
  t.same(await projectReceipt(projection, input, MAX), { ok: false, problem: 'threw' })
})

t.test('runaway non-tail recursion hits the depth limit', async t => {
  const projection = compile("($f := function($n) { 1 + $f($n + 1) }; { 'n': $f(0) })")
  await t.rejects(projection.evaluate(input, MAX), { message: /D1011/ })
})

t.test('the depth limit is per evaluation, not shared by concurrent evaluations', async t => {
  // About 60 levels of this recursion fit in the default depth of 200. The
  // time box is wall-clock and the ten evaluations interleave, so it is
  // widened here to test the depth limit alone.
  const projection = compileProjection("($f := function($n) { $n = 0 ? 0 : 1 + $f($n - 1) }; { 'd': $f(50) })", { timeoutMs: 60_000 })
  const results = await Promise.all(Array.from({ length: 10 }, async () => projectReceipt(projection, input, MAX)))
  for (const result of results) t.same(result, { ok: true, content: '{"d":50}' })
})

t.test('a larger depth limit is honoured', async t => {
  const source = "($f := function($n) { $n = 0 ? 0 : 1 + $f($n - 1) }; { 'd': $f(100) })"
  t.same(await project(source), { ok: false, problem: 'threw' })
  t.same(await projectReceipt(compileProjection(source, { ...RELAXED, maxDepth: 1000 }), input, MAX), { ok: true, content: '{"d":100}' })
})

t.test('an evaluation error names the jsonata code but never quotes receipt values', async t => {
  const secret = { intent: { action: 'build', arguments: { n: 987654321 } }, receipt }
  const projection = compile('{ intent.arguments.n: 1 }')
  await t.rejects(projection.evaluate(secret, MAX), { message: /^Projection evaluation failed: T1003 at position \d+$/ })
})

t.test('an input that cannot be copied is a failure, not a crash', async t => {
  const projection = compile("{ 'a': 1 }")
  t.same(await projectReceipt(projection, { intent: () => 1, receipt }, MAX), { ok: false, problem: 'threw' })
})
