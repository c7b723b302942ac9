/** Tool names as the model APIs take them (SPEC section 16, note to section 11), without HTTP. */
import t from 'tap'
import { fitsModelApis, modelToolNames } from '../../src/tools/model-names.js'

const API_NAME = /^[A-Za-z0-9_-]{1,64}$/

t.test('names that fit are offered as they are; the others under a fitting name, unique among all', async (t) => {
  const names = ['look', 'fs.read', 'fs_read', 'a.b.c', 'x'.repeat(30) + '.' + 'y'.repeat(33)]
  const mapped = modelToolNames(names, new Set(names))
  t.strictSame([...mapped.keys()].sort(), ['a.b.c', 'fs.read', 'x'.repeat(30) + '.' + 'y'.repeat(33)].sort(), 'only the names that do not fit are mapped')
  const offered = names.map((n) => mapped.get(n) ?? n)
  for (const name of offered) t.match(name, API_NAME, `${name} fits`)
  t.equal(new Set(offered).size, names.length, 'unique')
  t.match(mapped.get('fs.read'), /^fs_read_[0-9a-f]{8}$/, 'readable: the name, then a short hash')
  t.equal(mapped.get('x'.repeat(30) + '.' + 'y'.repeat(33))!.length, 64, 'cut to 64')
})

t.test('the same names map the same way in any order, and a clash takes a longer hash', async (t) => {
  const first = modelToolNames(['b.c', 'a.b'], new Set(['b.c', 'a.b']))
  const again = modelToolNames(['a.b', 'b.c'], new Set(['a.b', 'b.c']))
  t.strictSame([...first].sort(), [...again].sort())
  const short = first.get('a.b')!
  // A tool that happens to be named like the mapped name: the mapped one moves away from it.
  const clashing = modelToolNames(['a.b', short], new Set(['a.b', short]))
  t.not(clashing.get('a.b'), short)
  t.match(clashing.get('a.b'), /^a_b_[0-9a-f]{16}$/)
})

t.test('fitsModelApis holds exactly the names the APIs accept', async (t) => {
  for (const ok of ['a', 'A-b_9', 'x'.repeat(64)]) t.ok(fitsModelApis(ok), ok)
  for (const bad of ['', 'a.b', 'x'.repeat(65), 'a b', 'ä']) t.notOk(fitsModelApis(bad), bad)
})
