/**
 * A projection is an expression a tool author wrote; each kind of runaway
 * evaluation is bounded, so one projection cannot stall the service: regex
 * literals match in linear time, each step's string and sequence sizes are
 * capped, depth and time are boxed, and the evaluation runs on a worker
 * thread, stopped at its deadline even inside one step and at its heap
 * limit, while the service's event loop keeps turning.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import t from 'tap'
import {
  MAX_PROJECTION_SEQUENCE,
  MAX_PROJECTION_STRING_CHARS,
  compileProjection,
  projectReceipt
} from '../../src/receipts/projection.js'

const hostile = 'a'.repeat(10_000) + '!'
const input = { intent: { action: 'note' }, receipt: { status: 'committed', result: { text: hostile } } }
const MAX = 4096
// Wide enough that a loaded machine never turns these into timeouts: each case must end for its own reason.
const WIDE = { timeoutMs: 30_000 }

t.test('a catastrophic regex literal matches in linear time in $match, $contains, $replace and $split', async t => {
  const cases: Array<[string, string]> = [
    ["{ 'm': $exists($match(receipt.result.text, /^(a+)+$/)) }", '{"m":false}'],
    ["{ 'c': $contains(receipt.result.text, /^(a|aa)+$/) }", '{"c":false}'],
    ["{ 'r': $length($replace(receipt.result.text, /(a|a?)+!/, 'x')) }", '{"r":1}'],
    ["{ 's': $count($split(receipt.result.text, /(.*a){12}!/)) }", '{"s":2}']
  ]
  for (const [source, content] of cases) {
    t.same(await projectReceipt(compileProjection(source, WIDE), input, MAX), { ok: true, content }, source)
  }
})

t.test('a regex literal RE2 cannot match in linear time is refused when the tool is registered', async t => {
  t.throws(() => compileProjection("{ 'm': $match(receipt.status, /(a)\\1/) }"), /Invalid projection: pattern .* cannot be matched in linear time/)
  t.throws(() => compileProjection("{ 'm': $contains(receipt.status, /(?=c)c/) }"), /cannot be matched in linear time/)
})

t.test('a huge $pad fails the projection before the string is made', async t => {
  const source = `{ 'p': $length($pad('x', ${MAX_PROJECTION_STRING_CHARS * 25})) }`
  t.same(await projectReceipt(compileProjection(source, WIDE), input, MAX), { ok: false, problem: 'threw' })
  t.same(await projectReceipt(compileProjection("{ 'p': $pad('ab', -5, '#') & '|' & $pad('ab', 5) & '|' }", WIDE), input, MAX),
    { ok: true, content: '{"p":"###ab|ab   |"}' }, 'an ordinary $pad pads as jsonata does')
})

t.test('a string doubled step by step fails at the step that passes the limit', async t => {
  const source = "($d := function($s, $n) { $n = 0 ? $s : $d($s & $s, $n - 1) }; { 'n': $length($d(receipt.result.text, 40)) })"
  t.same(await projectReceipt(compileProjection(source, WIDE), input, MAX), { ok: false, problem: 'threw' })
})

t.test('a range or an array past the sequence limit fails', async t => {
  for (const source of [
    `{ 'n': $count([1..${MAX_PROJECTION_SEQUENCE + 1}]) }`,
    `{ 'n': $count($split($pad('', ${MAX_PROJECTION_SEQUENCE + 1}, 'x'), '')) }`
  ]) {
    t.same(await projectReceipt(compileProjection(source, WIDE), input, MAX), { ok: false, problem: 'threw' }, source)
  }
})

t.test('a product of ranges fails on the default time box long before it could fill memory', async t => {
  t.same(await projectReceipt(compileProjection("{ 'n': $count([1..1000000].([1..1000000])) }"), input, MAX), { ok: false, problem: 'threw' })
})

t.test('endless recursion fails on depth and an endless loop on time', async t => {
  t.same(await projectReceipt(compileProjection("($f := function($n) { $f($n) + 1 }; { 'n': $f(0) })", WIDE), input, MAX), { ok: false, problem: 'threw' })
  t.same(await projectReceipt(compileProjection("($f := function($n) { $f($n + 1) }; { 'n': $f(0) })", { timeoutMs: 50 }), input, MAX), { ok: false, problem: 'threw' })
})

// jsonata's $sort and $distinct are quadratic within one step (its merge copies the rest of the array at each
// element), and a step is never interrupted: in the service's thread 10,000 items held the loop 1.6 s, and this
// $sort of 50,000 held it minutes while the heap grew to 3.8 GB, then aborted the process out of memory. The
// bounds are generous: the machine may be shared and loaded.
t.test('a $sort or $distinct of 50,000 items is stopped at its deadline while the event loop keeps turning', async t => {
  const items = Array.from({ length: 50_000 }, (_, i) => (i * 7919) % 50_000)
  const big = { intent: { action: 'sort' }, receipt: { status: 'committed', result: { items } } }
  for (const source of ["{ 'first': $sort(receipt.result.items)[0] }", "{ 'n': $count($distinct(receipt.result.items)) }"]) {
    const delay = monitorEventLoopDelay({ resolution: 10 })
    delay.enable()
    const started = performance.now()
    const result = await projectReceipt(compileProjection(source), big, MAX)
    const tookMs = performance.now() - started
    delay.disable()
    t.same(result, { ok: false, problem: 'threw' }, source)
    t.ok(tookMs < 5000, `it ended after ${tookMs.toFixed(0)} ms, under 5000`)
    t.ok(delay.max / 1e6 < 500, `the event loop was held at most ${(delay.max / 1e6).toFixed(1)} ms meanwhile, under 500`)
  }
})

t.test("an allocation without bound fails at its worker's heap limit, and the next projection is evaluated", async t => {
  // Fifty ranges of a million numbers each, kept: about 400 MB, never reached.
  const hog = compileProjection("{ 'n': $count($map([1..50], function($i) { [1..1000000] })) }", WIDE)
  await t.rejects(hog.evaluate(input, MAX), { message: /^Projection evaluation failed: out_of_memory$/ })
  t.same(await projectReceipt(hog, input, MAX), { ok: false, problem: 'threw' })
  t.same(await projectReceipt(compileProjection("{ 'status': receipt.status }"), input, MAX), { ok: true, content: '{"status":"committed"}' })
})
