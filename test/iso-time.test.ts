import fc from 'fast-check'
import t from 'tap'
import { IsoTime } from '../src/iso-time.js'
import { seeded } from './seed.js'

t.test('answers the ISO text of any millisecond, the same as Date does, whatever it answered before', async (t) => {
  const iso = new IsoTime()
  for (const ms of [0, 1_700_000_000_000, 1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_999, 1_700_000_001_000, 1_700_000_000_000,
    253402300799999, -1, -999, -1000, -62167219200000, 1_700_000_000_000.7, 999.999]) {
    t.equal(iso.at(ms), new Date(ms).toISOString(), String(ms))
  }
})

t.test('outside years 0000-9999, where the ISO text has another shape, it answers what Date does', async (t) => {
  const iso = new IsoTime()
  for (const ms of [253402300800000, 8.64e15, -62167219200001, -8.64e15]) t.equal(iso.at(ms), new Date(ms).toISOString(), String(ms))
  t.throws(() => iso.at(Number.NaN), RangeError, 'an invalid time throws as Date does')
})

t.test('agrees with Date on random times, integer and fractional, in any order', async (t) => {
  const iso = new IsoTime()
  fc.assert(fc.property(
    fc.oneof(fc.integer({ min: -8.64e15, max: 8.64e15 }), fc.double({ min: -8.64e15, max: 8.64e15, noNaN: true }), fc.integer({ min: 1_700_000_000_000, max: 1_700_000_005_000 })),
    (ms) => iso.at(ms) === new Date(ms).toISOString()
  ), seeded(t, { numRuns: 20_000 }))
})
