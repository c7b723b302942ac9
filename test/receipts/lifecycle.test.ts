/**
 * An action receipt's life as pure functions (src/receipts/lifecycle.ts):
 * pending before sending, settled by the answer, replayed, settled later by
 * a retry, a status URL or a person, and never rewritten once settled.
 */
import t from 'tap'
import { NO_ANSWER_RECORDED, answeredReceipt, dispatchTiming, pendingReceipt, replayedReceipt, resolvedReceipt, retriedReceipt } from '../../src/receipts/lifecycle.js'

const call = { runId: 'r1', batchId: 'b1', callId: 'c1', tool: 'send_email', arguments: { to: 'a@example.com' } }
const PREPARED = '2026-12-03T08:00:00.000Z'
const SENT = '2026-12-03T08:00:00.010Z'
const committed = { status: 'committed' as const, result: { id: 7 }, stateRevision: 3, end: 'responded' }
const timedOut = { status: 'uncertain' as const, result: { error: 'outcome_unknown', cause: 'timeout' }, stateRevision: null, end: 'timed_out' }

t.test('a pending receipt is uncertain, with no answer recorded, dispatched once, and names the approval when there was one', async (t) => {
  const p = pendingReceipt(call, 'op1', PREPARED, SENT)
  t.match(p, { operationId: 'op1', runId: 'r1', batchId: 'b1', callId: 'c1', tool: 'send_email', intent: { action: 'send_email', arguments: call.arguments } })
  t.equal(p.status, 'uncertain')
  t.same(p.result, { error: 'outcome_unknown', cause: NO_ANSWER_RECORDED })
  t.same(p.timeline.map((e) => e.event), ['prepared', 'dispatched'])
  t.same(p.dispatch, { disposition: 'dispatched', attempts: 1 })
  t.same(p.timing, { dispatchedAt: SENT, completedAt: SENT, durationMs: 0 })
  t.same(pendingReceipt(call, 'op1', PREPARED, SENT, '2026-12-03T08:00:00.005Z').timeline.map((e) => e.event), ['prepared', 'approved', 'dispatched'])
})

t.test('the answer settles the pending receipt: its status, result, revision, the ending event at completion, the timing', async (t) => {
  const timing = dispatchTiming(new Date(SENT), 12.34567)
  t.same(timing, { dispatchedAt: SENT, completedAt: '2026-12-03T08:00:00.022Z', durationMs: 12.346 })
  const settled = answeredReceipt(pendingReceipt(call, 'op1', PREPARED, SENT), committed, timing)
  t.match(settled, { status: 'committed', result: { id: 7 }, stateRevision: 3, timing })
  t.same(settled.timeline.at(-1), { event: 'responded', at: timing.completedAt })
  t.same(settled.dispatch, { disposition: 'dispatched', attempts: 1 })
})

t.test('a replay shows the stored receipt as replayed without changing what it says', async (t) => {
  const stored = answeredReceipt(pendingReceipt(call, 'op1', PREPARED, SENT), committed, dispatchTiming(new Date(SENT), 5))
  const shown = replayedReceipt(stored)
  t.equal(shown.dispatch.disposition, 'replayed')
  t.equal(stored.dispatch.disposition, 'dispatched', 'the stored receipt is not changed')
  t.same({ ...shown, dispatch: stored.dispatch }, stored)
})

t.test('a retry settles an uncertain receipt in place, one attempt more; a settled receipt is not rewritten', async (t) => {
  const uncertain = answeredReceipt(pendingReceipt(call, 'op1', PREPARED, SENT), timedOut, dispatchTiming(new Date(SENT), 150))
  const retryTiming = dispatchTiming(new Date('2026-12-03T08:00:05.000Z'), 4)
  const retried = retriedReceipt(uncertain, committed, retryTiming)!
  t.match(retried, { status: 'committed', result: { id: 7 }, stateRevision: 3, timing: retryTiming, dispatch: { disposition: 'dispatched', attempts: 2 } })
  t.same(retried.timeline.slice(-3).map((e) => e.event), ['timed_out', 'retried', 'responded'])
  t.equal(retriedReceipt(retried, committed, retryTiming), undefined)
})

t.test('a status URL or a person settles an uncertain receipt, marked recovered or resolved; a settled receipt is not rewritten', async (t) => {
  const uncertain = answeredReceipt(pendingReceipt(call, 'op1', PREPARED, SENT), timedOut, dispatchTiming(new Date(SENT), 150))
  const AT = '2026-12-03T08:01:00.000Z'
  const recovered = resolvedReceipt(uncertain, { status: 'committed', stateRevision: 4 }, 'status_url', AT)!
  t.match(recovered, { status: 'committed', result: {}, stateRevision: 4, dispatch: { disposition: 'recovered', attempts: 1 } })
  t.same(recovered.timeline.at(-1), { event: 'recovered', at: AT })
  const resolved = resolvedReceipt(uncertain, { status: 'failed', result: { why: 'never arrived' } }, 'manual', AT)!
  t.match(resolved, { status: 'failed', result: { why: 'never arrived' }, stateRevision: null, dispatch: { disposition: 'resolved' } })
  t.equal(resolvedReceipt(recovered, { status: 'failed' }, 'manual', AT), undefined)
})
