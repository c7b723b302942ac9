import t from 'tap'
import { applyRewrites, RewriteError } from '../../src/prepare/rewrite.js'
import type { RewriteRule } from '../../src/model/tool.js'

t.test('rewrite rules apply in order', (t) => {
  const cases: Array<[string, Record<string, unknown>, RewriteRule[], Record<string, unknown>]> = [
    ['set adds a value', { x: 1 }, [{ op: 'set', path: '/y', value: 2 }], { x: 1, y: 2 }],
    ['set overrides a value', { x: 1 }, [{ op: 'set', path: '/x', value: 9 }], { x: 9 }],
    ['set overrides null', { x: null }, [{ op: 'set', path: '/x', value: 9 }], { x: 9 }],
    ['set creates intermediate objects', {}, [{ op: 'set', path: '/a/b/c', value: true }], { a: { b: { c: true } } }],
    ['set goes into an existing object', { a: { k: 1 } }, [{ op: 'set', path: '/a/b', value: 2 }], { a: { k: 1, b: 2 } }],
    ['set follows escapes', {}, [{ op: 'set', path: '/a~1b/c~0d', value: 1 }], { 'a/b': { 'c~d': 1 } }],
    ['set replaces an existing array element', { list: [1, 2] }, [{ op: 'set', path: '/list/1', value: 9 }], { list: [1, 9] }],
    ['set goes through an array element', { list: [{ a: 1 }] }, [{ op: 'set', path: '/list/0/b', value: 2 }], { list: [{ a: 1, b: 2 }] }],
    ['set writes an object value', {}, [{ op: 'set', path: '/o', value: { deep: [1] } }], { o: { deep: [1] } }],
    ['set writes an empty key', {}, [{ op: 'set', path: '/', value: 1 }], { '': 1 }],
    ['default fills an absent value', { x: 1 }, [{ op: 'default', path: '/y', value: 2 }], { x: 1, y: 2 }],
    ['default keeps a present value', { y: 1 }, [{ op: 'default', path: '/y', value: 2 }], { y: 1 }],
    ['default keeps a present null', { y: null }, [{ op: 'default', path: '/y', value: 2 }], { y: null }],
    ['default keeps a present false', { y: false }, [{ op: 'default', path: '/y', value: true }], { y: false }],
    ['default creates intermediate objects', {}, [{ op: 'default', path: '/a/b', value: 1 }], { a: { b: 1 } }],
    ['default leaves a path blocked by a scalar alone', { a: 5 }, [{ op: 'default', path: '/a/b', value: 1 }], { a: 5 }],
    ['default does not grow an array', { list: [1] }, [{ op: 'default', path: '/list/1', value: 2 }], { list: [1] }],
    ['remove deletes a value', { x: 1, y: 2 }, [{ op: 'remove', path: '/y' }], { x: 1 }],
    ['remove of an absent value does nothing', { x: 1 }, [{ op: 'remove', path: '/y' }], { x: 1 }],
    ['remove of an absent path does nothing', { x: 1 }, [{ op: 'remove', path: '/a/b/c' }], { x: 1 }],
    ['remove deletes a nested value', { a: { b: 1, c: 2 } }, [{ op: 'remove', path: '/a/b' }], { a: { c: 2 } }],
    ['remove takes an array element out', { list: [1, 2, 3] }, [{ op: 'remove', path: '/list/1' }], { list: [1, 3] }],
    ['remove ignores an index past the end', { list: [1] }, [{ op: 'remove', path: '/list/3' }], { list: [1] }],
    ['clamp raises to min', { x: -5 }, [{ op: 'clamp', path: '/x', min: 0, max: 255 }], { x: 0 }],
    ['clamp lowers to max', { x: 300 }, [{ op: 'clamp', path: '/x', min: 0, max: 255 }], { x: 255 }],
    ['clamp keeps a value in range', { x: 7 }, [{ op: 'clamp', path: '/x', min: 0, max: 255 }], { x: 7 }],
    ['clamp with only min', { x: -5, y: 1e9 }, [{ op: 'clamp', path: '/x', min: 0 }, { op: 'clamp', path: '/y', min: 0 }], { x: 0, y: 1e9 }],
    ['clamp with only max', { x: -5, y: 1e9 }, [{ op: 'clamp', path: '/x', max: 10 }, { op: 'clamp', path: '/y', max: 10 }], { x: -5, y: 10 }],
    ['clamp leaves a string alone', { x: '300' }, [{ op: 'clamp', path: '/x', max: 255 }], { x: '300' }],
    ['clamp leaves an absent value alone', {}, [{ op: 'clamp', path: '/x', max: 255 }], {}],
    ['clamp reaches nested numbers', { a: { list: [1, 500] } }, [{ op: 'clamp', path: '/a/list/1', max: 255 }], { a: { list: [1, 255] } }],
    ['rules run in order', { x: 1 }, [{ op: 'set', path: '/x', value: 900 }, { op: 'clamp', path: '/x', max: 255 }, { op: 'remove', path: '/y' }, { op: 'default', path: '/y', value: 0 }], { x: 255, y: 0 }],
    ['a later rule sees an earlier removal', { x: 1 }, [{ op: 'remove', path: '/x' }, { op: 'default', path: '/x', value: 2 }], { x: 2 }]
  ]
  for (const [name, args, rules, expected] of cases) {
    const before = structuredClone(args)
    t.strictSame(applyRewrites(args, rules), expected, name)
    t.strictSame(args, before, `${name}: the input is not mutated`)
  }
  t.end()
})

t.test('rules that cannot be enforced throw a RewriteError', (t) => {
  const cases: Array<[string, Record<string, unknown>, RewriteRule, RegExp]> = [
    ['set through a scalar', { a: 5 }, { op: 'set', path: '/a/b', value: 1 }, /\/a is not an object/],
    ['set through null', { a: null }, { op: 'set', path: '/a/b', value: 1 }, /\/a is not an object/],
    ['set past the end of an array', { list: [1] }, { op: 'set', path: '/list/1', value: 1 }, /no index "1"/],
    ['set through a missing array element', { list: [] }, { op: 'set', path: '/list/0/a', value: 1 }, /without index "0"/],
    ['set with the append token', { list: [] }, { op: 'set', path: '/list/-', value: 1 }, /no index "-"/],
    ['a path that is not a pointer', {}, { op: 'set', path: 'x', value: 1 }, /must be empty or start with "\/"/],
    ['the root path', {}, { op: 'remove', path: '' }, /whole arguments/]
  ]
  for (const [name, args, rule, message] of cases) {
    t.throws(() => applyRewrites(args, [rule]), RewriteError, name)
    t.throws(() => applyRewrites(args, [rule]), { message }, name)
  }
  t.end()
})

t.test('the output shares nothing with the input or the rule values', (t) => {
  const value = { tags: ['a'] }
  const args = { nested: { k: 1 } }
  const out = applyRewrites(args, [{ op: 'set', path: '/style', value }])
  ;(out.style as { tags: string[] }).tags.push('b')
  ;(out.nested as { k: number }).k = 2
  t.strictSame(value, { tags: ['a'] })
  t.strictSame(args, { nested: { k: 1 } })
  t.end()
})

t.test('no rules give back the input itself', (t) => {
  const args = { x: 1 }
  t.equal(applyRewrites(args, []), args)
  t.end()
})

t.test('in place rewriting changes the given object and still copies rule values', (t) => {
  const args: Record<string, unknown> = { x: 900 }
  const value = { on: true }
  const out = applyRewrites(args, [{ op: 'clamp', path: '/x', max: 255 }, { op: 'set', path: '/v', value }], { inPlace: true })
  t.equal(out, args)
  t.strictSame(args, { x: 255, v: { on: true } })
  t.not(args.v, value)
  t.end()
})

t.test('a __proto__ path sets an own property and pollutes nothing', (t) => {
  const out = applyRewrites({}, [{ op: 'set', path: '/__proto__/polluted', value: 'yes' }])
  t.ok(Object.hasOwn(out, '__proto__'))
  t.equal(Object.getPrototypeOf(out), Object.prototype)
  t.equal(({} as Record<string, unknown>).polluted, undefined)
  t.end()
})
