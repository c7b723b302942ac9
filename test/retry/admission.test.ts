/**
 * The pure core of retry safety: which calls are held back, and what a
 * finished batch adds to and takes off a run's unresolved uncertainties.
 */
import t from 'tap'
import { type SettledWrite, applyChange, changeOf, holdBack } from '../../src/uncertain/batch.js'
import type { Uncertainty } from '../../src/model/uncertainty.js'

const u = (operationId: string, fingerprint: string, over: Partial<Uncertainty> = {}): Uncertainty =>
  ({ operationId, fingerprint, conflictKey: null, callId: `call_${operationId}`, batchId: 'b1', tool: 'pay', action: false, since: 0, ...over })
const call = (fingerprint: string, over: Partial<{ write: boolean, idempotent: boolean, callId: string, action: boolean }> = {}) =>
  ({ fingerprint, write: true, idempotent: false, callId: 'c9', action: false, ...over })
const settled = (operationId: string, over: Partial<SettledWrite> = {}): SettledWrite =>
  ({ operationId, fingerprint: `fp_${operationId}`, conflictKey: null, callId: `call_${operationId}`, tool: 'pay', action: false, uncertain: false, unsent: false, held: undefined, ...over })

t.test('holdBack blocks a write with an open fingerprint, never a read, and lets an idempotent tool retry once a batch', async (t) => {
  const open = [u('op_1', 'A'), u('op_2', 'B', { action: true, callId: 'c1' })]
  const held = holdBack(open, [
    call('A'), call('A', { write: false }), call('Z'), call('A', { idempotent: true }), call('A', { idempotent: true }), call('B', { action: true, callId: 'c1' }), call('B', { action: true })
  ])
  t.match(held[0], { kind: 'blocked', by: { operationId: 'op_1' } }, 'a write of the same fingerprint')
  t.equal(held[1], undefined, 'a read')
  t.equal(held[2], undefined, 'another write')
  t.match(held[3], { kind: 'retry', of: { operationId: 'op_1' } }, 'the first idempotent copy is the retry')
  t.match(held[4], { kind: 'blocked' }, 'a second copy waits behind it')
  t.equal(held[5], undefined, 'the very same action call replays its receipt')
  t.match(held[6], { kind: 'blocked', by: { operationId: 'op_2' } }, 'an action under a new call id')
  t.same(holdBack([], [call('A')]), [])
  t.same(holdBack(undefined, [call('A')]), [])
})

t.test('changeOf adds each uncertain operation once, and only a definitive answer of a retry resolves', async (t) => {
  const of = u('op_1', 'A')
  const change = changeOf('b2', [
    settled('op_2', { uncertain: true }), settled('op_2', { uncertain: true }), settled('op_3'),
    settled('op_1', { held: { kind: 'retry', of } })
  ], 5)
  t.same(change.added.map((x) => x.operationId), ['op_2'])
  t.match(change.added[0], { batchId: 'b2', since: 5 })
  t.same(change.retried, [of])
  for (const [why, over] of [['uncertain again', { uncertain: true }], ['never sent', { unsent: true }]] as const) {
    t.same(changeOf('b2', [settled('op_1', { held: { kind: 'retry', of }, ...over })], 5).retried, [], why)
  }
})

t.test('applyChange resolves only what the run still holds, so a retry racing another resolution is counted once', async (t) => {
  const a = u('op_1', 'A')
  const b = u('op_2', 'B')
  const applied = applyChange([a, b], { added: [u('op_3', 'C'), b], retried: [a, u('op_gone', 'G')] })
  t.same(applied.list.map((x) => x.operationId), ['op_2', 'op_3'])
  t.same(applied.resolved.map((x) => x.operationId), ['op_1'])
  t.same(applied.dropped, [])
})

t.test('applyChange keeps at most the newest 256 and answers the ones that fell off', async (t) => {
  const many = Array.from({ length: 256 }, (_, i) => u(`op_${i}`, `F${i}`))
  const applied = applyChange(many, { added: [u('op_new', 'N')], retried: [] })
  t.equal(applied.list.length, 256)
  t.same(applied.dropped.map((x) => x.operationId), ['op_0'])
  t.equal(applied.list.at(-1)?.operationId, 'op_new')
})
