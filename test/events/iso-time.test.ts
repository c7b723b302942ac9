import t from 'tap'
import { IsoTime } from '../../src/events/iso-time.js'

t.test('answers the ISO text of any millisecond, the same as Date does, whatever it answered before', async (t) => {
  const iso = new IsoTime()
  for (const ms of [0, 1_700_000_000_000, 1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_000, 253402300799999]) {
    t.equal(iso.at(ms), new Date(ms).toISOString())
  }
})
