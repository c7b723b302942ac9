import { createHash } from 'node:crypto'
import t from 'tap'
import fc from 'fast-check'
import canonicalizeModule from 'canonicalize'
import { canonicalJson, canonicalText } from '../../src/model/json.js'
import { fingerprint, fingerprintOfText, fingerprintPrefix } from '../../src/repeat/exact.js'
import { runs, seeded } from '../seed.js'

// The canonicalize package (RFC 8785), as the oracle. It is CommonJS typed as `export default`: accept either shape.
type Serialize = (input: unknown) => string | undefined
const canonicalizeExport = canonicalizeModule as unknown as Serialize | { default: Serialize }
const serialize: Serialize = typeof canonicalizeExport === 'function' ? canonicalizeExport : canonicalizeExport.default

t.test('key order at every depth gives the same canonical form and fingerprint', async t => {
  const a = { z: 1, a: { y: [{ q: 1, b: 2 }, { d: { n: null, m: true } }], c: 'x' }, m: [] }
  const b = { m: [], a: { c: 'x', y: [{ b: 2, q: 1 }, { d: { m: true, n: null } }] }, z: 1 }
  t.equal(canonicalJson(a), '{"a":{"c":"x","y":[{"b":2,"q":1},{"d":{"m":true,"n":null}}]},"m":[],"z":1}')
  t.equal(canonicalJson(a), canonicalJson(b))
  t.equal(fingerprint('build', a), fingerprint('build', b))
})

t.test('array order still matters', async t => {
  t.not(fingerprint('t', [1, 2]), fingerprint('t', [2, 1]))
})

t.test('strings are canonicalized per RFC 8785', async t => {
  const cases: Array<[string, unknown, string]> = [
    ['an escaped and a literal é are one string', JSON.parse('"\\u00e9"'), '"é"'],
    ['U+2028 and U+2029 stay literal', '\u2028\u2029', '"\u2028\u2029"'],
    ['an emoji stays literal', '😀', '"😀"'],
    ['an escaped emoji pair becomes literal', JSON.parse('"\\ud83d\\ude00"'), '"😀"'],
    ['short escapes are used where JSON has them', '\b\f\n\r\t"\\', '"\\b\\f\\n\\r\\t\\"\\\\"'],
    ['other control characters are lowercase \\u escapes', '\u0000\u000f\u001f', '"\\u0000\\u000f\\u001f"'],
    ['DEL and C1 controls stay literal', '\u007f\u0080', '"\u007f\u0080"'],
    ['a solidus is not escaped', JSON.parse('"\\/"'), '"/"'],
    ['a lone surrogate is escaped deterministically', '\ud800', '"\\ud800"']
  ]
  for (const [name, input, expected] of cases) {
    t.equal(canonicalJson(input), expected, name)
  }
  t.equal(fingerprint('t', { s: JSON.parse('"caf\\u00e9"') }), fingerprint('t', { s: 'café' }))
})

t.test('numbers are serialized per RFC 8785', async t => {
  const cases: Array<[string, unknown, string]> = [
    ['1.0 is 1', JSON.parse('1.0'), '1'],
    ['1e21 uses an exponent', 1e21, '1e+21'],
    ['1e20 does not', 1e20, '100000000000000000000'],
    ['-0 is 0', -0, '0'],
    ['2**53', 2 ** 53, '9007199254740992'],
    ['2**53 + 1 parses to the same double as 2**53', JSON.parse('9007199254740993'), '9007199254740992'],
    ['2**64', 2 ** 64, '18446744073709552000'],
    ['0.1 + 0.2', 0.1 + 0.2, '0.30000000000000004'],
    ['4.50', JSON.parse('4.50'), '4.5'],
    ['1e-7 uses an exponent', 1e-7, '1e-7'],
    ['0.000001 does not', 0.000001, '0.000001']
  ]
  for (const [name, input, expected] of cases) {
    t.equal(canonicalJson(input), expected, name)
  }
  t.equal(fingerprint('t', { n: 1 }), fingerprint('t', JSON.parse('{"n":1.0}')))
  t.equal(fingerprint('t', { n: -0 }), fingerprint('t', { n: 0 }))
})

t.test('empty objects and arrays are canonical and distinct', async t => {
  t.equal(canonicalJson({}), '{}')
  t.equal(canonicalJson([]), '[]')
  t.equal(canonicalJson({ b: [], a: {} }), '{"a":{},"b":[]}')
  t.not(fingerprint('t', {}), fingerprint('t', []))
})

// RFC 8785 section 3.2.2 (the example of the whole scheme).
t.test('RFC 8785 section 3.2.2 example', async t => {
  const input = JSON.parse(String.raw`{
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  }`)
  t.equal(canonicalJson(input),
    String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`)
})

// RFC 8785 section 3.2.3: properties sort by UTF-16 code units, so the emoji's
// high surrogate (U+D83D) comes before U+FB33.
t.test('RFC 8785 section 3.2.3 property sorting example', async t => {
  const input = JSON.parse(String.raw`{
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  }`)
  t.equal(canonicalJson(input),
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
    '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}')
})

// RFC 8785 appendix B: IEEE 754 bit patterns and their serializations.
t.test('RFC 8785 appendix B number vectors', async t => {
  const vectors: Array<[string, string]> = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2']
  ]
  for (const [bits, expected] of vectors) {
    t.equal(canonicalJson(Buffer.from(bits, 'hex').readDoubleBE(0)), expected, bits)
  }
  t.throws(() => canonicalJson(Buffer.from('7fffffffffffffff', 'hex').readDoubleBE(0)), TypeError, 'NaN')
  t.throws(() => canonicalJson(Buffer.from('7ff0000000000000', 'hex').readDoubleBE(0)), TypeError, 'Infinity')
})

t.test('values JSON cannot hold are refused with a TypeError', async t => {
  const cycle: Record<string, unknown> = {}
  cycle.self = cycle
  const cases: Array<[string, unknown]> = [
    ['undefined at the top level', undefined],
    ['undefined in an array', [1, undefined]],
    ['an array hole', [1, , 3]], // eslint-disable-line no-sparse-arrays
    ['a function', { f: () => 1 }],
    ['a symbol', { s: Symbol('x') }],
    ['a BigInt', { n: 1n }],
    ['NaN', { n: Number.NaN }],
    ['Infinity', [Infinity]],
    ['-Infinity', -Infinity],
    ['a Date', { d: new Date(0) }],
    ['a Map', new Map()],
    ['a class instance', new (class Point { x = 1 })()],
    ['a cycle', cycle]
  ]
  for (const [name, input] of cases) {
    t.throws(() => canonicalJson(input), TypeError, name)
    t.throws(() => fingerprint('t', input), TypeError, `${name} (fingerprint)`)
  }
})

t.test('the TypeError never quotes argument keys or values', async t => {
  t.throws(() => canonicalJson({ 'secret-key': { n: 1n } }), { message: /^(?!.*secret).*$/ })
})

t.test('an object property that is undefined is omitted, as JSON.stringify does', async t => {
  t.equal(canonicalJson({ a: 1, b: undefined }), '{"a":1}')
  t.equal(fingerprint('t', { a: 1, b: undefined }), fingerprint('t', { a: 1 }))
})

t.test('shared references that are not cycles are fine', async t => {
  const shared = { x: 1 }
  t.equal(canonicalJson({ a: shared, b: [shared] }), '{"a":{"x":1},"b":[{"x":1}]}')
})

t.test('a null-prototype object is a plain object', async t => {
  const o = Object.assign(Object.create(null) as Record<string, unknown>, { b: 1, a: 2 })
  t.equal(canonicalJson(o), '{"a":2,"b":1}')
})

t.test('the fingerprint is SHA-256 hex of the JCS form of [name, args]', async t => {
  const fp = fingerprint('build', { y: 2, x: 1 })
  t.match(fp, /^[0-9a-f]{64}$/)
  t.equal(fp, createHash('sha256').update('["build",{"x":1,"y":2}]').digest('hex'))
  t.equal(fingerprint('build', { x: 1, y: 2 }), fp, 'deterministic')
})

t.test('different tool names give different fingerprints', async t => {
  t.not(fingerprint('build', { x: 1 }), fingerprint('destroy', { x: 1 }))
  t.not(fingerprint('Build', { x: 1 }), fingerprint('build', { x: 1 }))
})

t.test('the name and the arguments cannot run into each other', async t => {
  t.not(fingerprint('ab', 'c'), fingerprint('a', 'bc'))
  t.not(fingerprint('a\n', '"b"'), fingerprint('a', '\n"b"'))
})

t.test('raw string arguments are hashed as a JSON string, never as the object they spell', async t => {
  const raw = '{"x": 1, "y": '
  t.equal(fingerprint('build', raw), fingerprint('build', raw), 'deterministic')
  t.equal(fingerprint('build', raw), createHash('sha256').update(JSON.stringify(['build', raw])).digest('hex'))
  t.not(fingerprint('build', '{"x":1}'), fingerprint('build', { x: 1 }))
  t.not(fingerprint('build', '{"x":1}'), fingerprint('build', '{"x": 1}'), 'a raw string is not reparsed')
  t.not(fingerprint('t', '1'), fingerprint('t', 1))
})

t.test('fingerprintPrefix gives the first 12 hex characters', async t => {
  const fp = fingerprint('build', { x: 1 })
  t.equal(fingerprintPrefix(fp), fp.slice(0, 12))
  t.equal(fingerprintPrefix(fp).length, 12)
})

t.test('fingerprintPrefix refuses anything that is not a fingerprint', async t => {
  for (const bad of ['', 'abc', 'x'.repeat(64), fingerprint('t', 1).toUpperCase(), `${fingerprint('t', 1)}0`]) {
    t.throws(() => fingerprintPrefix(bad), TypeError)
  }
})

t.test('a non-string tool name is refused', async t => {
  t.throws(() => fingerprint(1 as unknown as string, {}), TypeError)
})

t.test('agrees with the canonicalize package on any JSON value, and reads back as the same value', async t => {
  fc.assert(fc.property(fc.jsonValue({ stringUnit: 'binary', maxDepth: 6 }), (value) => {
    const text = canonicalJson(value)
    t.equal(text, serialize(value))
    t.same(JSON.parse(text), value)
  }), seeded(t, { numRuns: runs(500, 2000) }))
  // Object keys that sort differently by code unit than by code point (surrogates above U+E000).
  t.equal(canonicalJson({ '\uE000': 1, '\uD83D\uDE00': 2 }), serialize({ '\uE000': 1, '\uD83D\uDE00': 2 }))
  const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${(i * 7919) % 40}`, i]))
  t.equal(canonicalJson(many), serialize(many), 'more keys than the in-place sort takes')
})

/** `value` with the keys of every object inserted in code-unit order: what JSON.stringify can write as it stands. */
function sortedCopy (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedCopy)
  if (value === null || typeof value !== 'object') return value
  // fromEntries makes own properties, "__proto__" included (an assignment would set the prototype).
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortedCopy((value as Record<string, unknown>)[key])]))
}

t.test('values already in canonical order (written by JSON.stringify) agree with the canonicalize package too', async t => {
  fc.assert(fc.property(fc.jsonValue({ stringUnit: 'binary', maxDepth: 6 }), (value) => {
    t.equal(canonicalJson(sortedCopy(value)), serialize(value))
  }), seeded(t, { numRuns: runs(500, 2000) }))
  // Integer-like keys are listed in numeric order by the engine, which is not code-unit order.
  t.equal(canonicalJson({ 9: 'a', 10: 'b', x: 'c' }), '{"10":"b","9":"a","x":"c"}')
  t.equal(canonicalJson({ a: [1, 'two', null, true, { b: -0, c: 1e21 }] }), '{"a":[1,"two",null,true,{"b":0,"c":1e+21}]}')
  t.equal(canonicalJson(JSON.parse('{"__proto__":1,"a":2}')), '{"__proto__":1,"a":2}', 'an own __proto__ key is a key like any other')
  let deep: unknown = { z: 1 }
  for (let i = 0; i < 200; i++) deep = { a: [deep] }
  t.equal(canonicalJson(deep), serialize(deep), 'deeper than the check looks: the writer takes it')
})

t.test('objects and arrays of more than 64 members, written by JSON.stringify with their keys as its list, agree with the canonicalize package', async t => {
  const member = fc.jsonValue({ stringUnit: 'binary', maxDepth: 2 })
  // Records that share their keys (the list path) and ones that do not (the writer), scalars among them.
  const record = fc.dictionary(fc.constantFrom('b', 'a', 'c', '10', '9', '\uE000', '\uD83D\uDE00'), member, { maxKeys: 4 })
  const wide = fc.oneof(
    fc.dictionary(fc.string({ unit: 'binary' }), fc.oneof(fc.string({ unit: 'binary' }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null)), { minKeys: 65, maxKeys: 200 }),
    fc.dictionary(fc.string({ unit: 'binary' }), member, { minKeys: 65, maxKeys: 120 }),
    fc.array(record, { minLength: 65, maxLength: 200 }),
    fc.array(member, { minLength: 65, maxLength: 120 })
  )
  fc.assert(fc.property(wide, fc.boolean(), (value, nested) => {
    const v = nested ? { z: [value], a: value } : value
    const { text } = canonicalText(v)
    return text === serialize(v) && canonicalJson(v) === text
  }), seeded(t, { numRuns: runs(200, 1000) }))
  const records = Array.from({ length: 100 }, (_, i) => i % 2 === 0 ? { b: i, a: 'x' } : { a: { d: [i], c: null } })
  t.equal(canonicalJson(records), serialize(records), 'records of two shapes')
  const missing = Array.from({ length: 100 }, (_, i) => i === 50 ? { __proto__: null, toString: 1 } : { a: i })
  t.equal(canonicalJson(missing), serialize(missing), 'a key Object.prototype has, missing from most records: not read through their prototype')
  const proto = Array.from({ length: 100 }, (_, i) => JSON.parse(i === 7 ? '{"__proto__":1}' : '{"a":1}') as unknown)
  t.equal(canonicalJson(proto), serialize(proto), 'an own __proto__ key in one record of many')
  t.throws(() => canonicalJson(Array.from({ length: 100 }, (_, i) => i === 99 ? { a: Infinity } : { a: i })), /finite number/, 'the writer still refuses what JSON cannot hold')
  const cycle: Record<string, unknown> = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]))
  cycle.self = cycle
  t.throws(() => canonicalJson(cycle), /cycle/)
  t.equal(canonicalJson({ ...Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i])), u: undefined }), serialize(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]))), 'an undefined member is left out')
})

t.test('many keys are sorted as Array.prototype.sort sorts them: by UTF-16 code units, a prefix first', async t => {
  const key = fc.oneof(fc.string({ unit: 'binary', maxLength: 6 }), fc.string({ unit: fc.constantFrom('a', 'b', '\uE000', '\uD83D', '\uDE00'), maxLength: 8 }), fc.nat().map((n) => `k${n}`))
  fc.assert(fc.property(fc.uniqueArray(key, { minLength: 257, maxLength: 1500 }), (keys) => {
    const value = Object.fromEntries(keys.map((k, i) => [k, i]))
    return canonicalJson(value) === serialize(value)
  }), seeded(t, { numRuns: runs(100, 500) }))
  const prefixes = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => ['x'.repeat(i % 40) + String(i % 7), i]))
  t.equal(canonicalJson(prefixes), serialize(prefixes), 'keys that are prefixes of one another')
})

t.test('canonicalText is canonicalJson, and says plain only when JSON.stringify writes the same text', async t => {
  fc.assert(fc.property(fc.jsonValue({ stringUnit: 'binary', maxDepth: 4 }), fc.boolean(), (value, sorted) => {
    const v = sorted ? sortedCopy(value) : value
    const { text, plain } = canonicalText(v)
    // RFC 8785 only reorders members: the length, which the argument size limit reads, is JSON.stringify's.
    return text === canonicalJson(v) && (!plain || text === JSON.stringify(v)) &&
      Buffer.byteLength(text) === Buffer.byteLength(JSON.stringify(v))
  }), seeded(t, { numRuns: 1000 }))
  t.same(canonicalText({ a: 1, b: [2] }), { text: '{"a":1,"b":[2]}', plain: true })
  t.same(canonicalText({ b: 1, a: 2 }), { text: '{"a":2,"b":1}', plain: false })
  t.throws(() => canonicalText(undefined), TypeError)
  t.throws(() => canonicalText({ n: Infinity }), TypeError)
})

t.test('fingerprintOfText, given canonicalJson of the arguments, is the fingerprint: SHA-256 of the JCS form of [name, args]', async t => {
  fc.assert(fc.property(fc.string({ unit: 'binary' }), fc.jsonValue({ stringUnit: 'binary', maxDepth: 4 }), (name, args) => {
    const expected = createHash('sha256').update(canonicalJson([name, args])).digest('hex')
    return fingerprintOfText(name, canonicalJson(args)) === expected && fingerprint(name, args) === expected
  }), seeded(t, { numRuns: 1000 }))
  t.throws(() => fingerprintOfText(1 as unknown as string, '{}'), TypeError)
})
