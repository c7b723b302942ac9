import t from 'tap'
import { coerceScalars, parseArguments, renameArgumentAliases, resolveTool } from '../../src/prepare/compat.js'
import { makeLookup, makeTool } from './tool-fixture.js'

function nested (depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {}
  for (let i = 1; i < depth; i++) value = { a: value }
  return value
}

t.test('arguments are parsed from every form the model APIs send', (t) => {
  const cases: Array<{ name: string, raw: unknown, value: Record<string, unknown> }> = [
    { name: 'a JSON string of an object', raw: '{"x": 1, "kind": "wall"}', value: { x: 1, kind: 'wall' } },
    { name: 'an object', raw: { x: 1 }, value: { x: 1 } },
    { name: 'an empty string', raw: '', value: {} },
    { name: 'a blank string', raw: ' \n\t', value: {} },
    { name: 'undefined', raw: undefined, value: {} },
    { name: 'null', raw: null, value: {} },
    { name: 'a double-encoded JSON string', raw: JSON.stringify(JSON.stringify({ x: 1 })), value: { x: 1 } },
    { name: 'an object with a null prototype', raw: Object.assign(Object.create(null) as object, { x: 1 }), value: { x: 1 } },
    { name: 'a constructor key alone', raw: '{"constructor": {"name": "x"}}', value: { constructor: { name: 'x' } } },
    { name: 'nesting of exactly 64 levels', raw: JSON.stringify(nested(64)), value: nested(64) }
  ]
  for (const c of cases) {
    const result = parseArguments(c.raw)
    t.ok(result.ok, c.name)
    if (result.ok) t.same(result.value, c.value, c.name)
  }
  t.end()
})

t.test('an object is taken as it is and an empty string gives a fresh object each time', (t) => {
  const raw = { x: 1 }
  const result = parseArguments(raw)
  t.equal(result.ok && result.value, raw)
  const a = parseArguments('')
  const b = parseArguments('')
  t.not(a.ok && a.value, b.ok && b.value)
  t.end()
})

t.test('arguments that are not a JSON object are refused without echoing them', (t) => {
  const cases: Array<{ name: string, raw: unknown, message: RegExp }> = [
    { name: 'invalid JSON', raw: '{"secret": "hunter2"', message: /not valid JSON/ },
    { name: 'JSON of a bare word', raw: 'hunter2', message: /not valid JSON/ },
    { name: 'an array', raw: ['hunter2'], message: /must be a JSON object/ },
    { name: 'a JSON string of an array', raw: '["hunter2"]', message: /must be a JSON object/ },
    { name: 'a number', raw: 42, message: /must be a JSON object/ },
    { name: 'a JSON string of a number', raw: '42', message: /must be a JSON object/ },
    { name: 'a boolean', raw: true, message: /must be a JSON object/ },
    { name: 'a JSON string of null', raw: 'null', message: /must be a JSON object/ },
    { name: 'a JSON string of a string that is not JSON', raw: '"hunter2"', message: /not valid JSON/ },
    { name: 'a triple-encoded JSON string', raw: JSON.stringify(JSON.stringify(JSON.stringify({ x: 'hunter2' }))), message: /must be a JSON object/ },
    { name: 'a class instance', raw: new Date(), message: /must be a JSON object/ },
    { name: 'nesting of 65 levels in a string', raw: JSON.stringify(nested(65)), message: /deeper than 64/ },
    { name: 'nesting of 65 levels in an object', raw: nested(65), message: /deeper than 64/ },
    { name: 'nesting of 65 levels through arrays', raw: JSON.stringify({ a: JSON.parse('['.repeat(64) + ']'.repeat(64)) as unknown }), message: /deeper than 64/ },
    { name: 'a top-level __proto__ key', raw: '{"__proto__": {"polluted": "hunter2"}}', message: /__proto__/ },
    { name: 'an escaped __proto__ key', raw: '{"\\u005f_proto__": {"polluted": "hunter2"}}', message: /__proto__/ },
    { name: 'a nested __proto__ key', raw: '{"a": [{"__proto__": {"polluted": "hunter2"}}]}', message: /__proto__/ },
    { name: 'a __proto__ key in an object', raw: JSON.parse('{"__proto__": {"polluted": "hunter2"}}') as unknown, message: /__proto__/ },
    { name: 'a value JSON cannot hold', raw: { a: [() => 'hunter2'] }, message: /only JSON values/ },
    { name: 'a bigint', raw: { a: 1n }, message: /only JSON values/ },
    { name: 'constructor.prototype', raw: '{"constructor": {"prototype": {"polluted": "hunter2"}}}', message: /constructor\.prototype/ }
  ]
  for (const c of cases) {
    const result = parseArguments(c.raw)
    t.equal(result.ok, false, c.name)
    if (result.ok) continue
    t.equal(result.reason, 'invalid_arguments', c.name)
    t.match(result.message, c.message, c.name)
    t.notMatch(result.message, /hunter2/, `${c.name}: the value is not echoed`)
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched')
  t.end()
})

t.test('the depth limit can be lowered', (t) => {
  t.equal(parseArguments('{"a": {"b": {}}}', 2).ok, false)
  t.equal(parseArguments('{"a": {"b": 1}}', 2).ok, true)
  t.end()
})

t.test('argument aliases are renamed at the top level', (t) => {
  const aliases = { type: 'kind', t: 'kind', self: 'self', pos: 'position' }
  const cases: Array<{ name: string, args: Record<string, unknown>, expected: Record<string, unknown> }> = [
    { name: 'an alias becomes its real name', args: { type: 'wall', x: 1 }, expected: { kind: 'wall', x: 1 } },
    { name: 'the real name wins over its alias', args: { type: 'door', kind: 'wall' }, expected: { kind: 'wall' } },
    { name: 'the real name wins whatever the order', args: { kind: 'wall', type: 'door' }, expected: { kind: 'wall' } },
    { name: 'the first of two aliases wins', args: { t: 'door', type: 'wall' }, expected: { kind: 'door' } },
    { name: 'an alias to itself is kept', args: { self: 1 }, expected: { self: 1 } },
    { name: 'nested keys are not renamed', args: { a: { type: 'x' } }, expected: { a: { type: 'x' } } },
    { name: 'no alias present', args: { kind: 'wall' }, expected: { kind: 'wall' } }
  ]
  for (const c of cases) {
    const before = structuredClone(c.args)
    t.strictSame(renameArgumentAliases(c.args, aliases), c.expected, c.name)
    t.strictSame(c.args, before, `${c.name}: the input is not mutated`)
  }
  t.end()
})

t.test('renaming returns the input itself when there is nothing to rename', (t) => {
  const args = { kind: 'wall' }
  t.equal(renameArgumentAliases(args, {}), args)
  t.equal(renameArgumentAliases(args, { type: 'kind' }), args)
  t.not(renameArgumentAliases({ type: 'wall' }, { type: 'kind' }), args)
  t.end()
})

t.test('scalars are coerced only where the schema makes it unambiguous', (t) => {
  const schema = {
    type: 'object',
    $defs: { int: { type: 'integer' } },
    properties: {
      i: { type: 'integer' },
      n: { type: 'number' },
      b: { type: 'boolean' },
      s: { type: 'string' },
      either: { type: ['integer', 'string'] },
      nullable: { type: ['integer', 'null'] },
      untyped: {},
      ref: { $ref: '#/$defs/int' },
      any: { anyOf: [{ type: 'integer' }] },
      nested: { type: 'object', properties: { deep: { type: 'object', properties: { i: { type: 'integer' } } } } },
      list: { type: 'array', items: { type: 'integer' } },
      tuple: { type: 'array', prefixItems: [{ type: 'boolean' }, { type: 'number' }], items: { type: 'integer' } },
      prefixOnly: { type: 'array', prefixItems: [{ type: 'integer' }] }
    }
  }
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['"5" becomes 5 for an integer', { i: '5' }, { i: 5 }],
    ['"-12" becomes -12 for an integer', { i: '-12' }, { i: -12 }],
    ['"0" becomes 0 for an integer', { i: '0' }, { i: 0 }],
    ['"5.5" stays for an integer', { i: '5.5' }, { i: '5.5' }],
    ['"1e3" stays for an integer', { i: '1e3' }, { i: '1e3' }],
    ['"05" stays for an integer', { i: '05' }, { i: '05' }],
    ['" 5" stays for an integer', { i: ' 5' }, { i: ' 5' }],
    ['an unsafe integer stays a string', { i: '9007199254740993' }, { i: '9007199254740993' }],
    ['"5.5" becomes 5.5 for a number', { n: '5.5' }, { n: 5.5 }],
    ['"1e3" becomes 1000 for a number', { n: '1e3' }, { n: 1000 }],
    ['"-0.25E-2" becomes a number', { n: '-0.25E-2' }, { n: -0.0025 }],
    ['"1e400" stays, it is not finite', { n: '1e400' }, { n: '1e400' }],
    ['"NaN" and "Infinity" stay', { n: 'NaN', i: 'Infinity' }, { n: 'NaN', i: 'Infinity' }],
    ['".5" and "0x10" stay', { n: '.5', i: '0x10' }, { n: '.5', i: '0x10' }],
    ['"true" becomes true', { b: 'true' }, { b: true }],
    ['"false" becomes false', { b: 'false' }, { b: false }],
    ['"TRUE", "1" and "" stay for a boolean', { b: 'TRUE', n: '' }, { b: 'TRUE', n: '' }],
    ['a value of the right type stays', { i: 5, n: 1.5, b: true }, { i: 5, n: 1.5, b: true }],
    ['nothing is coerced to a string', { s: 5, either: 7 }, { s: 5, either: 7 }],
    ['a string stays for a string', { s: '5' }, { s: '5' }],
    ['a string stays where the type is ambiguous', { either: '5' }, { either: '5' }],
    ['null does not make a type ambiguous', { nullable: '5' }, { nullable: 5 }],
    ['an untyped place is left alone', { untyped: '5' }, { untyped: '5' }],
    ['$ref is not followed', { ref: '5' }, { ref: '5' }],
    ['anyOf is not followed', { any: '5' }, { any: '5' }],
    ['a key the schema does not name is left alone', { other: '5' }, { other: '5' }],
    ['nested properties are coerced', { nested: { deep: { i: '7' } } }, { nested: { deep: { i: 7 } } }],
    ['items are coerced', { list: ['1', 2, '3'] }, { list: [1, 2, 3] }],
    ['prefixItems then items are coerced', { tuple: ['true', '2.5', '3', '4'] }, { tuple: [true, 2.5, 3, 4] }],
    ['items beyond prefixItems without items stay', { prefixOnly: ['1', '2'] }, { prefixOnly: [1, '2'] }],
    ['a string where an object is expected stays', { nested: '5' }, { nested: '5' }]
  ]
  for (const [name, args, expected] of cases) {
    const before = structuredClone(args)
    t.strictSame(coerceScalars(args, schema), expected, name)
    t.strictSame(args, before, `${name}: the input is not mutated`)
  }
  t.end()
})

t.test('coercion returns the input itself when nothing changed and copies only what did', (t) => {
  const schema = { type: 'object', properties: { a: { type: 'object', properties: { i: { type: 'integer' } } }, b: { type: 'object' } } }
  const same = { a: { i: 1 }, b: {} }
  t.equal(coerceScalars(same, schema), same)
  const changed = { a: { i: '1' }, b: {} }
  const out = coerceScalars(changed, schema)
  t.not(out, changed)
  t.equal(out.b, changed.b, 'an untouched branch is shared')
  t.equal(changed.a.i, '1')
  t.end()
})

t.test('tools resolve by name or alias', (t) => {
  const build = makeTool({ name: 'build', aliases: ['construct'] })
  const lookup = makeLookup([build])
  const cases: Array<[string, unknown, boolean]> = [
    ['the canonical name', 'build', true],
    ['an alias', 'construct', true],
    ['an unknown name', 'demolish', false],
    ['a name of another case', 'Build', false],
    ['a name that is not a string', 42, false]
  ]
  for (const [name, requested, ok] of cases) {
    const result = resolveTool(requested, lookup)
    t.equal(result.ok, ok, name)
    if (result.ok) t.equal(result.value, build, name)
    else t.equal(result.reason, 'unknown_tool', name)
  }
  const unknown = resolveTool('demolish', lookup)
  t.match(!unknown.ok && unknown.message, /"demolish"/, 'the message names the tool')
  t.end()
})
