import t from 'tap'
import { arrayIndex, formatPointer, getAtPointer, parsePointer } from '../../src/model/json-pointer.js'

t.test('pointers parse into unescaped tokens', (t) => {
  const cases: Array<[string, string[]]> = [
    ['', []],
    ['/', ['']],
    ['/a', ['a']],
    ['/a/b/0', ['a', 'b', '0']],
    ['/a~1b', ['a/b']],
    ['/m~0n', ['m~n']],
    ['/~01', ['~1']],
    ['/a//b', ['a', '', 'b']]
  ]
  for (const [pointer, tokens] of cases) {
    t.strictSame(parsePointer(pointer), tokens, JSON.stringify(pointer))
    t.equal(formatPointer(tokens), pointer, `${JSON.stringify(pointer)} formats back`)
  }
  t.end()
})

t.test('malformed pointers throw an error naming the pointer', (t) => {
  for (const pointer of ['a', 'a/b', '/a~2', '/a~']) {
    t.throws(() => parsePointer(pointer), { message: new RegExp(JSON.stringify(pointer).replace(/[~/]/g, '.')) }, pointer)
  }
  t.end()
})

t.test('only canonical decimal tokens are array indexes', (t) => {
  const cases: Array<[string, number]> = [['0', 0], ['12', 12], ['01', -1], ['-1', -1], ['-', -1], ['a', -1], ['1.0', -1]]
  for (const [token, index] of cases) t.equal(arrayIndex(token), index, token)
  t.end()
})

t.test('values are read at pointers without following prototypes', (t) => {
  const doc = { a: { b: [10, { c: null }] }, 'x/y': 1, u: undefined }
  const cases: Array<[string, { found: boolean, value?: unknown }]> = [
    ['', { found: true, value: doc }],
    ['/a/b/0', { found: true, value: 10 }],
    ['/a/b/1/c', { found: true, value: null }],
    ['/x~1y', { found: true, value: 1 }],
    ['/u', { found: true, value: undefined }],
    ['/a/b/2', { found: false }],
    ['/a/b/01', { found: false }],
    ['/a/b/-', { found: false }],
    ['/a/missing', { found: false }],
    ['/a/b/0/deeper', { found: false }],
    ['/toString', { found: false }],
    ['/a/__proto__', { found: false }],
    ['/a/b/length', { found: false }]
  ]
  for (const [pointer, expected] of cases) {
    const got = getAtPointer(doc, parsePointer(pointer))
    t.equal(got.found, expected.found, `${pointer} found`)
    if (expected.found) t.equal(got.value, expected.value, `${pointer} value`)
  }
  t.end()
})
