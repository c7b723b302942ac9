import fc from 'fast-check'
import t from 'tap'
import { compileConflictKey, resolveConflictKey } from '../../src/prepare/conflict-key.js'
import { seeded } from '../seed.js'

/**
 * How a value that is neither a string, a number nor a boolean has always
 * been written into a key: uncertain writes kept across turns (and in Redis,
 * across a deploy) hold their conflict keys, which later writes must match.
 */
function keyTextBefore (value: unknown): string {
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  const sorted = (v: unknown): string => {
    if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null'
    if (Array.isArray(v)) return `[${v.map(sorted).join(',')}]`
    const record = v as Record<string, unknown>
    return `{${Object.keys(record).sort().filter((k) => record[k] !== undefined).map((k) => `${JSON.stringify(k)}:${sorted(record[k])}`).join(',')}}`
  }
  return sorted(value)
}

t.test('conflict key templates compile into literals and pointers', (t) => {
  const cases: Array<[string, unknown[]]> = [
    ['tile:{/x}:{/y}', [{ literal: 'tile:' }, { pointer: ['x'] }, { literal: ':' }, { pointer: ['y'] }]],
    ['', []],
    ['global', [{ literal: 'global' }]],
    ['{/a/b}', [{ pointer: ['a', 'b'] }]],
    ['{/a~1b}{/c~0d}', [{ pointer: ['a/b'] }, { pointer: ['c~d'] }]],
    ['a}b{/x}}', [{ literal: 'a}b' }, { pointer: ['x'] }, { literal: '}' }]],
    ['{/}', [{ pointer: [''] }]]
  ]
  for (const [template, parts] of cases) t.strictSame(compileConflictKey(template), parts, template)
  t.end()
})

t.test('malformed templates throw a clear error', (t) => {
  const cases: Array<[string, RegExp]> = [
    ['tile:{/x', /"\{" at position 5 is never closed/],
    ['{x}', /"x" at position 0 is not a JSON pointer starting with "\/"/],
    ['{}', /"" at position 0 is not a JSON pointer/],
    ['{{/x}}', /"\{\/x" at position 0 is not a JSON pointer/],
    ['{/a~2}', /"~" not followed by 0 or 1/]
  ]
  for (const [template, message] of cases) t.throws(() => compileConflictKey(template), { message }, template)
  t.end()
})

t.test('conflict keys resolve against the arguments', (t) => {
  const args = {
    x: 3, y: -1.5, kind: 'wall', on: true, off: false, none: null,
    pos: { col: 2, row: { n: 'b' } }, list: ['p', 'q'], obj: { b: 1, a: [1, { d: 2, c: 3 }] }
  }
  const cases: Array<[string, string]> = [
    ['tile:{/x}:{/y}', 'tile:3:-1.5'],
    ['{/kind}', 'wall'],
    ['{/on}/{/off}', 'true/false'],
    ['{/none}', 'null'],
    ['{/pos/col}.{/pos/row/n}', '2.b'],
    ['{/list/1}', 'q'],
    ['{/list}', '["p","q"]'],
    ['{/obj}', '{"a":[1,{"c":3,"d":2}],"b":1}'],
    ['static', 'static']
  ]
  for (const [template, key] of cases) {
    const result = resolveConflictKey(compileConflictKey(template), args)
    t.strictSame(result, { ok: true, value: key }, template)
  }
  t.end()
})

t.test('a pointer that resolves to nothing fails naming the pointer, never a value', (t) => {
  const args = { x: 'hunter2', list: [1], u: undefined }
  const cases: Array<[string, string]> = [
    ['tile:{/x}:{/y}', '/y'],
    ['{/x/deeper}', '/x/deeper'],
    ['{/list/1}', '/list/1'],
    ['{/u}', '/u'],
    ['{/a~1b}', '/a~1b'],
    ['{/toString}', '/toString']
  ]
  for (const [template, pointer] of cases) {
    const result = resolveConflictKey(compileConflictKey(template), args)
    t.equal(result.ok, false, template)
    if (result.ok) continue
    t.equal(result.reason, 'conflict_key_unresolved', template)
    t.ok(result.message.includes(pointer), `${template}: names ${pointer}`)
    t.notMatch(result.message, /hunter2/, `${template}: no value`)
  }
  t.end()
})

t.test('a key holds the same text for any JSON value as keys always have, whatever its member order', async (t) => {
  const parts = compileConflictKey('k:{/v}')
  fc.assert(fc.property(fc.jsonValue({ stringUnit: 'binary', maxDepth: 4 }), (value) => {
    const resolved = resolveConflictKey(parts, { v: value })
    return resolved.ok && resolved.value === `k:${keyTextBefore(value)}`
  }), seeded(t, { numRuns: 2000 }))
  const shuffled = resolveConflictKey(compileConflictKey('{/v}'), { v: { b: { y: 1, x: [2, { d: 0, c: 1 }] }, a: null } })
  t.strictSame(shuffled, { ok: true, value: '{"a":null,"b":{"x":[2,{"c":1,"d":0}],"y":1}}' })
})
