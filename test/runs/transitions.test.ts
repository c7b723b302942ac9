/**
 * Run transitions as pure functions of the record (src/runs/transitions.ts),
 * without a store: what answering a batch leaves of it.
 */
import t from 'tap'
import { newRunRecord } from '../../src/runs/record.js'
import { resolveRunOptions } from '../../src/runs/options.js'
import { settleAnswered } from '../../src/runs/transitions.js'
import type { RunRecord } from '../../src/model/run.js'

const NOW = 1_800_000_000_000

function leased (owner: string, batchId: string): RunRecord {
  const run = newRunRecord('r1', 'acme', resolveRunOptions({}, 8), NOW)
  run.inFlight = { batchId, owner, leaseExpiresAt: NOW + 30_000 }
  run.admitted = { batchId, repeat: run.repeat, toolCalls: 0 }
  return run
}

t.test('an answered batch leaves where its admission started: only a resume of the unanswered batch reads it', async (t) => {
  const run = leased('replica-a', 'b1')
  settleAnswered(run, 'b1', 'replica-a')
  t.equal(run.admitted, null)
})

t.test('a replica that lost the lease leaves it for the one that holds it', async (t) => {
  const run = leased('replica-b', 'b1')
  settleAnswered(run, 'b1', 'replica-a')
  t.equal(run.admitted?.batchId, 'b1', 'replica-b may still need it to admit the batch again')
})

t.test("another batch's admission start is not this batch's to drop", async (t) => {
  const run = leased('replica-a', 'b1')
  run.admitted = { batchId: 'b0', repeat: run.repeat, toolCalls: 0 }
  settleAnswered(run, 'b1', 'replica-a')
  t.equal(run.admitted?.batchId, 'b0')
})

t.test('a batch that waited for approvals leaves the record when answered', async (t) => {
  const run = leased('replica-a', 'b1')
  run.waiting = { state: { batchId: 'b1' } } as RunRecord['waiting']
  settleAnswered(run, 'b1', 'replica-a')
  t.equal(run.waiting, null)
  const other = leased('replica-a', 'b1')
  other.waiting = { state: { batchId: 'b9' } } as RunRecord['waiting']
  settleAnswered(other, 'b1', 'replica-a')
  t.equal(other.waiting?.state.batchId, 'b9', "another batch's wait stays")
})
