/** jsonTextNestsDeeper: nesting read from JSON text before it is parsed. */
import t from 'tap'
import { jsonTextNestsDeeper } from '../../src/model/json.js'

const nested = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels)

t.test('counts objects and arrays, the top-level value as level 1', async (t) => {
  t.equal(jsonTextNestsDeeper(nested(64), 64), false, '64 levels')
  t.equal(jsonTextNestsDeeper(nested(65), 64), true, '65 levels')
  t.equal(jsonTextNestsDeeper(`{"a":{"b":${nested(62)}}}`, 64), false, 'objects and arrays mixed, 64')
  t.equal(jsonTextNestsDeeper(`{"a":{"b":${nested(63)}}}`, 64), true, 'objects and arrays mixed, 65')
  t.equal(jsonTextNestsDeeper(`[${'[],'.repeat(1000)}[]]`, 2), false, 'siblings do not add up')
})

t.test('brackets inside strings, escaped quotes among them, do not count', async (t) => {
  const inString = JSON.stringify({ s: '['.repeat(100) + '\\"{{{' + '"'.repeat(3) })
  t.equal(jsonTextNestsDeeper(inString, 2), false)
  t.equal(jsonTextNestsDeeper(`{"s":"\\\\",${'"k":'}${nested(3)}}`, 3), true, 'a string that ends in an escaped backslash ends there')
  t.equal(jsonTextNestsDeeper(JSON.stringify({ s: 'a\\"[[[[' }), 2), false)
})

t.test('text no longer than the limit cannot be deeper', async (t) => {
  t.equal(jsonTextNestsDeeper('[[[', 3), false)
  t.equal(jsonTextNestsDeeper('', 0), false)
  t.equal(jsonTextNestsDeeper('[[[[', 3), true)
})
