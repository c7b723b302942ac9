/**
 * Pending receipts (SPEC sections 5 and 7): an action call's receipt is in
 * the journal, `uncertain`, before its request is sent, so a call whose
 * dispatch never recorded an answer (a replica killed, a store lost) is
 * replayed as uncertain when resent, never sent twice.
 */
import t, { type Test } from 'tap'
import { NO_ANSWER_RECORDED } from '../../src/receipts/lifecycle.js'
import type { RunIdentity } from '../../src/model/incarnation.js'
import { operationId } from '../../src/receipts/operation-id.js'
import type { Receipt } from '../../src/model/receipt.js'
import { fingerprint } from '../../src/repeat/exact.js'
import { MemoryStore } from '../../src/store/memory.js'
import { StoreUnavailableError } from '../../src/store/types.js'
import { buildTestApp, get, holdCalls, post, startExecutor, tool } from '../helper.js'

type Result = { callId: string, status: string, content: string, isError: boolean, details: Record<string, any> }

const committed = { status: 'committed', result: { label: 'Wall #12' }, stateRevision: 42 }
const PROJECTION = "{ 'action': intent.action, 'status': $lowercase(receipt.status), 'label': receipt.result.label }"
const OPEN_TENANT = 'default'

async function setup (t: Test, opts: { store?: MemoryStore, action?: Record<string, unknown> } = {}) {
  const ex = await startExecutor(t)
  ex.on('build', () => committed)
  ex.on('place', () => committed)
  const { app } = await buildTestApp(t, {
    ...(opts.store === undefined ? {} : { store: opts.store }),
    tools: [
      tool('build', ex.url, { conflictKey: 'tile:{/x}', action: opts.action ?? {} }),
      tool('place', ex.url, { action: {} }),
      tool('look', ex.url, { readOnly: true })
    ]
  })
  return { ex, app }
}

/** What a dispatch that died after storing its pending receipt leaves in the journal. */
function deadDispatchReceipt (run: RunIdentity, callId: string, toolName: string, args: Record<string, unknown>): Receipt {
  const at = new Date().toISOString()
  const { runId } = run
  return {
    operationId: operationId(run, callId, fingerprint(toolName, args)),
    runId,
    batchId: 'b1',
    callId,
    tool: toolName,
    intent: { action: toolName, arguments: args },
    status: 'uncertain',
    result: { error: 'outcome_unknown', cause: NO_ANSWER_RECORDED },
    stateRevision: null,
    timeline: [{ event: 'prepared', at }, { event: 'dispatched', at }],
    dispatch: { disposition: 'dispatched', attempts: 1 },
    timing: { dispatchedAt: at, completedAt: at, durationMs: 0 }
  }
}

const statuses = (results: Result[]): string[][] => results.map((r) => [r.callId, r.status])

t.test('while an action call is at its executor the journal holds its pending receipt, uncertain; the answer replaces it with one committed receipt', async (t) => {
  const { ex, app } = await setup(t)
  const held = holdCalls(ex, 'build', committed)
  t.teardown(() => { held.release() })
  await post(app, '/v1/runs', { runId: 'r1' })
  const answer = post(app, '/v1/runs/r1/batches', { batchId: 'b1', calls: [{ id: 'c1', name: 'build', arguments: { x: 1 } }] })
  await held.started

  const during = (await get(app, '/v1/runs/r1/receipts')).body.receipts as Receipt[]
  t.equal(during.length, 1, 'the operation entered the journal before it was sent')
  const pending = during[0]!
  t.match(pending, {
    runId: 'r1',
    batchId: 'b1',
    callId: 'c1',
    status: 'uncertain',
    result: { error: 'outcome_unknown', cause: 'no_answer_recorded' },
    stateRevision: null,
    dispatch: { disposition: 'dispatched', attempts: 1 }
  })
  t.same(pending.timeline.map((e) => e.event), ['prepared', 'dispatched'])
  t.equal(pending.timing.completedAt, pending.timing.dispatchedAt, 'no completion recorded yet')
  t.equal(ex.calls[0]!.idempotencyKey, pending.operationId)
  t.same((await get(app, `/v1/receipts/${pending.operationId}`)).body, pending)

  held.release()
  const r = (await answer).body.results[0] as Result
  t.equal(r.status, 'ok')
  const receipt = r.details.receipt as Receipt
  t.equal(receipt.status, 'committed')
  t.equal(receipt.operationId, pending.operationId)
  t.same(receipt.timeline.slice(0, 2), pending.timeline, 'the final receipt continues the pending one')
  t.same(receipt.timeline.map((e) => e.event), ['prepared', 'dispatched', 'responded'])
  t.equal(receipt.timing.dispatchedAt, pending.timing.dispatchedAt)
  t.equal(receipt.dispatch.disposition, 'dispatched')
  t.equal(r.content, JSON.stringify(receipt), 'the model sees the final receipt')
  t.same((await get(app, '/v1/runs/r1/receipts')).body.receipts, [receipt], 'one journal entry, the final receipt in place of the pending one')
  t.same((await get(app, `/v1/receipts/${receipt.operationId}`)).body, receipt)
  t.equal(ex.calls.length, 1)
})

t.test('an action call whose operation has a pending receipt is not sent: it replays uncertain and blocks later writes with its conflict key', async (t) => {
  const { ex, app } = await setup(t)
  await post(app, '/v1/runs', { runId: 'r1' })
  const dead = deadDispatchReceipt((await app.services.store.getRun('r1'))!, 'c1', 'build', { x: 1 })
  await app.services.store.putReceipt(dead, OPEN_TENANT, 'the-dead-dispatch')
  const res = await post(app, '/v1/runs/r1/batches', {
    batchId: 'b1',
    calls: [
      { id: 'c1', name: 'build', arguments: { x: 1 } },
      { id: 'c2', name: 'build', arguments: { x: 1, y: 1 } },
      { id: 'c3', name: 'build', arguments: { x: 2 } },
      { id: 'c4', name: 'look', arguments: { x: 1 } }
    ]
  })
  t.equal(res.status, 200)
  const results = res.body.results as Result[]
  t.same(statuses(results), [['c1', 'uncertain'], ['c2', 'blocked'], ['c3', 'ok'], ['c4', 'ok']])
  const [c1, c2] = results
  t.equal(c1!.isError, true)
  t.same(c1!.details.receipt, { ...dead, dispatch: { disposition: 'replayed', attempts: 1 } }, 'details hold the stored receipt, replayed')
  t.equal(c1!.content, JSON.stringify(dead), 'the model sees the receipt as stored')
  t.equal(c2!.details.blockedBy, 'c1', 'a later write with the same key is blocked: the action may have happened')
  t.same(ex.calls.map((c) => c.callId), ['c3', 'c4'], 'neither the replayed call nor the blocked one reached the executor')
  const journal = (await get(app, '/v1/runs/r1/receipts')).body.receipts as Receipt[]
  t.same(journal.map((r) => [r.callId, r.status]), [['c1', 'uncertain'], ['c3', 'committed']], 'the pending receipt stays as it was')
})

t.test('a pending receipt of an action without a conflict key blocks every later write of the batch, not reads', async (t) => {
  const { ex, app } = await setup(t)
  await post(app, '/v1/runs', { runId: 'r1' })
  await app.services.store.putReceipt(deadDispatchReceipt((await app.services.store.getRun('r1'))!, 'c1', 'place', { x: 1 }), OPEN_TENANT, 'the-dead-dispatch')
  const res = await post(app, '/v1/runs/r1/batches', {
    calls: [
      { id: 'c1', name: 'place', arguments: { x: 1 } },
      { id: 'c2', name: 'build', arguments: { x: 5 } },
      { id: 'c3', name: 'look', arguments: { x: 1 } }
    ]
  })
  const results = res.body.results as Result[]
  t.same(statuses(results), [['c1', 'uncertain'], ['c2', 'blocked'], ['c3', 'ok']])
  t.equal(results[1]!.details.blockedBy, 'c1')
  t.same(ex.calls.map((c) => c.callId), ['c3'])
})

/** A memory store whose final receipt writes fail, as a Redis that went away after the executor answered. */
class FinalWriteFails extends MemoryStore {
  settled = 0
  override async settleReceipt (): Promise<boolean> {
    this.settled++
    throw new StoreUnavailableError('The Redis store failed: connection lost')
  }
}

t.test('a final receipt that could not be stored leaves the pending one: the call resent replays uncertain and is not sent again', async (t) => {
  const store = new FinalWriteFails({ runTtlMs: 60_000, maxRuns: 100, receiptRetentionMs: 60_000, maxReceipts: 1000 })
  const { ex, app } = await setup(t, { store, action: { projection: PROJECTION } })
  await post(app, '/v1/runs', { runId: 'r1' })
  const call = { id: 'c1', name: 'build', arguments: { x: 1 } }
  const first = (await post(app, '/v1/runs/r1/batches', { batchId: 'b1', calls: [call] })).body.results[0] as Result
  t.equal(store.settled, 1, 'the executor answered and the final write was tried')
  t.equal(first.status, 'uncertain', 'the answer could not be recorded: the outcome is not known to the journal')

  const again = (await post(app, '/v1/runs/r1/batches', { batchId: 'b2', calls: [call] })).body.results[0] as Result
  t.equal(again.status, 'uncertain')
  t.equal(again.content, '{"action":"build","status":"uncertain"}', 'projected from the pending receipt')
  t.match(again.details.receipt, { status: 'uncertain', result: { cause: 'no_answer_recorded' }, dispatch: { disposition: 'replayed' } })
  t.equal(ex.calls.length, 1, 'the executor saw the operation once')
  t.same((await get(app, '/v1/runs/r1/receipts')).body.receipts.map((r: Receipt) => r.status), ['uncertain'])
})

/** A memory store that cannot journal a receipt at all, as a Redis that went away just before the dispatch. */
class JournalFails extends MemoryStore {
  override async putReceipt (): Promise<Receipt> {
    throw new StoreUnavailableError('The Redis store failed: connection lost')
  }
}

t.test('an action whose pending receipt cannot be stored is not sent: a definitive error that blocks no later write', async (t) => {
  const store = new JournalFails({ runTtlMs: 60_000, maxRuns: 100, receiptRetentionMs: 60_000, maxReceipts: 1000 })
  const { ex, app } = await setup(t, { store })
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'c1', name: 'build', arguments: { x: 1 } }, { id: 'c2', name: 'build', arguments: { x: 1, y: 2 } }, { id: 'c3', name: 'look', arguments: {} }] })
  const results = res.body.results as Result[]
  t.same(statuses(results), [['c1', 'error'], ['c2', 'error'], ['c3', 'ok']], 'not uncertain: nothing was sent, so nothing is blocked either')
  t.equal(results[0]!.details.cause, 'store_unavailable')
  t.match(JSON.parse(results[0]!.content), { error: 'store_unavailable' })
  t.same(ex.calls.map((c) => c.callId), ['c3'], 'no action reached the executor')
})
