/**
 * The timeline's layout (ui/timeline.js), without a browser: a call's start
 * is told in whole milliseconds and its duration in tenths, so an epoch's
 * call can read as starting before the epoch before it ended; the page must
 * not draw an overlap that the scheduler never allows.
 */
import t from 'tap'
// @ts-expect-error: the page's own script, plain JavaScript without types
import { layout } from '../../ui/timeline.js'

interface Row { callId: string, start: number | null, end: number | null }

const call = (callId: string, epoch: number, startedAt: string, durationMs: number): Record<string, unknown> =>
  ({ callId, name: 'tool', status: 'ok', details: { epoch, startedAt, durationMs } })

const tenth = (ms: number | null): number | null => ms === null ? null : Math.round(ms * 10) / 10

/** Each call's [start, end] on the time axis, to a tenth of a millisecond. */
const rowsOf = (answer: unknown): Record<string, [number | null, number | null]> =>
  Object.fromEntries((layout(answer) as { rows: Row[] }).rows.map((r) => [r.callId, [tenth(r.start), tenth(r.end)]]))

t.test("a call told as starting less than 1 ms before its epoch's predecessor ended is drawn from that end, with its own duration", async (t) => {
  // r1 started at .100 plus some fraction and ran 10.6 ms; w1 began at .110 plus a fraction, after r1 settled.
  const rows = rowsOf({ results: [call('r1', 0, '2026-12-05T10:00:00.100Z', 10.6), call('r2', 0, '2026-12-05T10:00:00.101Z', 3), call('w1', 1, '2026-12-05T10:00:00.110Z', 5.2), call('r3', 2, '2026-12-05T10:00:00.115Z', 1)] })
  t.same(rows.r1, [0, 10.6])
  t.same(rows.r2, [1, 4])
  t.same(rows.w1, [10.6, 15.8], 'the write starts where epoch 0 ended, and keeps its duration')
  t.same(rows.r3, [15.8, 16.8], 'the shift carries to the next epoch')
})

t.test('a start 1 ms or more before the epoch before ended, or after it, is drawn as told', async (t) => {
  const overlap = rowsOf({ results: [call('r1', 0, '2026-12-05T10:00:00.100Z', 12), call('w1', 1, '2026-12-05T10:00:00.110Z', 5)] })
  t.same(overlap.w1, [10, 15], 'not hidden: it is not rounding')
  const after = rowsOf({ results: [call('r1', 0, '2026-12-05T10:00:00.100Z', 2.5), call('w1', 1, '2026-12-05T10:00:00.110Z', 5)] })
  t.same(after.w1, [10, 15])
  const sameEpoch = rowsOf({ results: [call('r1', 0, '2026-12-05T10:00:00.100Z', 10.6), call('r2', 0, '2026-12-05T10:00:00.110Z', 1)] })
  t.same(sameEpoch.r2, [10, 11], 'calls of one epoch overlap freely')
})
