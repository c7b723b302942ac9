/**
 * The write-ahead guard (src/guards/write-ahead.ts) costs a batch with no
 * write nothing: it opens with no hooks, so such a batch's calls are sent
 * with no step before their epoch and none around their dispatch.
 */
import t from 'tap'
import { writeAheadGuard } from '../../src/guards/write-ahead.js'
import type { GuardedBatch } from '../../src/guards/types.js'
import type { PreparationOutcome } from '../../src/model/call.js'

function batchOf (outcomes: unknown[]): GuardedBatch {
  return {
    runId: 'r', tenant: 't', batchId: 'b', leaseId: 'b', turn: 1, requestHash: 'h', scopes: new Set(),
    calls: [], outcomes: outcomes as PreparationOutcome[], fingerprints: outcomes.map(() => 'f')
  }
}

const guard = writeAheadGuard({ store: { recordWrites: async () => true }, replicaId: 'replica' })

t.test('a batch of reads (and rejected calls) opens a write-ahead guard with no hooks', (t) => {
  const g = guard.open(batchOf([{ ok: true, tool: { readOnly: true } }, { ok: false, tool: null }]))
  t.same(Object.keys(g), [])
  t.equal(g.beforeEpoch, undefined)
  t.equal(g.acquire, undefined)
  t.equal(g.admit, undefined)
  t.end()
})

t.test('a batch with a write opens one that records it before its epoch and may answer it instead of sending it', (t) => {
  const g = guard.open(batchOf([{ ok: true, tool: { readOnly: true } }, { ok: true, tool: { readOnly: false } }]))
  t.type(g.beforeEpoch, 'function')
  t.type(g.acquire, 'function')
  t.type(g.admit, 'function')
  t.end()
})
