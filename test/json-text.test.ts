import fc from 'fast-check'
import t from 'tap'
import { jsonNumber, jsonString } from '../src/json-text.js'
import { seeded } from './seed.js'

t.test('jsonString and jsonNumber write what JSON.stringify writes', async (t) => {
  const strings = ['', 'plain', 'run_e932cc4f-3253', 'q"uote', 'back\\slash', '\u001f', '\u007f', 'é', '🙂', '\ud800', '\udfff', 'a\ud83d', 'x'.repeat(256), 'x'.repeat(257) + '"']
  for (let c = 0; c < 0x80; c++) strings.push(`a${String.fromCharCode(c)}b`)
  for (const s of strings) t.equal(jsonString(s), JSON.stringify(s), JSON.stringify(s))
  for (const n of [0, -0, 1, -1.5, 1e21, 1e-7, 123456789.125, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.MAX_VALUE]) {
    t.equal(jsonNumber(n), JSON.stringify(n), String(n))
  }
  fc.assert(fc.property(fc.string({ unit: 'binary' }), (s) => jsonString(s) === JSON.stringify(s)), seeded(t, { numRuns: 2000 }))
})
