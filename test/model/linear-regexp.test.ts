import t from 'tap'
import { LinearRegexEngine, UnsupportedPatternError, compileLinear, linearRegExp, patternCost, unsupportedPatterns } from '../../src/model/linear-regexp.js'
import { REDOS_CASES } from '../hostile/redos-cases.js'


t.test('every catastrophic pattern answers on a 10,000-character hostile string, and answers no', async t => {
  for (const { pattern, hostile } of REDOS_CASES) {
    t.equal(linearRegExp(pattern, 'u').test(hostile), false, pattern)
  }
})

t.test('ordinary schema patterns match exactly as JavaScript does', async t => {
  const table: Array<[string, string[]]> = [
    ['^[A-Za-z0-9_.-]{1,64}$', ['build', 'a.b-c_d', '', 'x'.repeat(65), 'no spaces']],
    ['\\d{3}', ['ab123', '12', '١٢٣']],
    ['^\\p{L}+$', ['héllo', 'naïve', 'abc1']],
    ['^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$', ['a@b.co', 'a@b', 'a b@c.de']],
    ['colou?r', ['color', 'colour', 'colr']],
    ['^(?:\\+\\d{1,3})?[ -]?\\d{4,14}$', ['+33 612345678', '0612345678', '06-12']],
    ['^\\u00e9t\\u00e9$', ['été', 'ete']],
    ['😀{2}', ['😀😀', '😀']]
  ]
  for (const [pattern, inputs] of table) {
    const linear = linearRegExp(pattern, 'u')
    const js = new RegExp(pattern, 'u')
    for (const input of inputs) t.equal(linear.test(input), js.test(input), `${pattern} on ${JSON.stringify(input)}`)
  }
})

t.test('patterns RE2 cannot match in linear time are refused with the reason', async t => {
  for (const pattern of ['(a)\\1', '(?=a)b', 'a(?!b)', '(?<=a)b(?!c)']) {
    t.throws(() => compileLinear(pattern, 'u'), UnsupportedPatternError, pattern)
  }
  t.throws(() => compileLinear('(a)\\1'), /cannot be matched in linear time \(invalid escape sequence/)
})

t.test('each engine names itself by pattern and flags, so Ajv caches each pattern once', async t => {
  t.equal(String(linearRegExp('^a$', 'u')), String(linearRegExp('^a$', 'u')))
  t.not(String(linearRegExp('^a$', 'u')), String(linearRegExp('^b$', 'u')))
})

t.test('unsupportedPatterns names the JSON pointer of every bad pattern and patternProperties key', async t => {
  const schema = {
    type: 'object',
    properties: {
      good: { type: 'string', pattern: '^[a-z]+$' },
      bad: { type: 'string', pattern: '(x)\\1' },
      'we/ird~': { type: 'array', items: { pattern: '(?=y)y' } },
      // A property named like a keyword is a schema like any other.
      pattern: { type: 'string', pattern: 'ok' }
    },
    patternProperties: { '^(?!_)': { type: 'string' }, '^x-': { type: 'string' } },
    anyOf: [{ pattern: '(a)\\1' }],
    // Data, not schemas: never read as patterns.
    const: { pattern: '(a)\\1' },
    enum: [{ pattern: '(a)\\1' }],
    default: { pattern: '(a)\\1' },
    examples: [{ pattern: '(a)\\1' }]
  }
  const problems = unsupportedPatterns(schema)
  t.same(problems.map((p) => p.slice(0, p.indexOf(':'))).sort(), [
    '/inputSchema/anyOf/0/pattern',
    '/inputSchema/patternProperties/^(?!_)',
    '/inputSchema/properties/bad/pattern',
    '/inputSchema/properties/we~1ird~0/items/pattern'
  ])
  t.same(unsupportedPatterns({ type: 'object', properties: { a: { pattern: '^[a-z]+$' } } }), [])
})

t.test('the JSONata engine finds successive matches at the same UTF-16 indices as a global RegExp', async t => {
  const input = 'x😀b1 éb22 b333'
  const linear = new LinearRegexEngine(/b(\d+)/)
  const js = /b(\d+)/g
  for (let i = 0; i < 4; i++) {
    const a = linear.exec(input)
    const b = js.exec(input)
    t.same(a === null ? null : [...a, a.index], b === null ? null : [...b, b.index], `match ${i}`)
    t.equal(linear.lastIndex, js.lastIndex)
  }
})

t.test('the JSONata engine honours the i and m flags and reports unmatched groups as undefined', async t => {
  const ci = new LinearRegexEngine(/HELLO/i)
  t.equal(ci.exec('say hello')?.index, 4)
  const multi = new LinearRegexEngine(/^b$/m)
  t.equal(multi.exec('a\nb\nc')?.index, 2)
  const optional = new LinearRegexEngine(/a(x)?b/)
  const m = optional.exec('ab')
  t.same(m === null ? null : [...m], ['ab', undefined])
})

t.test('patternCost estimates the instructions RE2 compiles a pattern into, counted repeats written out, without compiling it', async t => {
  for (const pattern of ['^[a-z]+$', '^k1[a-z]{0,200}$', '^[a-z0-9-]{1,63}(\\.[a-z0-9-]{1,63})*$', '[a-z]{0,1000}'.repeat(5), '^\\p{L}{2,8}$']) {
    const real = compileLinear(pattern, 'u').programSize()
    const estimate = patternCost(pattern)
    t.ok(estimate >= real && estimate <= 2 * real + 10, `${pattern.slice(0, 30)}: estimate ${estimate}, compiled ${real}`)
  }
  t.ok(patternCost('((a{10}){10}){10}') >= 1000, 'nested repeats multiply')
  t.equal(compileLinear('^k1[a-z]{0,200}$', 'u'), compileLinear('^k1[a-z]{0,200}$', 'u'), 'a pattern is compiled once and kept')
})
