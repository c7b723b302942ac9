/**
 * The CancelBus contract (src/store/cancel-bus.ts): a cancel reaches every
 * listener once, from this client or another.
 */
import type { Test } from 'tap'
import type { CancelReason } from '../../src/store/types.js'
import { type Harness, againstEveryStore } from './harness.js'

await againstEveryStore('CancelBus contract', contract)

async function contract (t: Test, h: Harness): Promise<void> {
  t.test('a published cancel reaches every listener once, from this client or another', async (t) => {
    const { store, peer, subscribed } = await h.open(t)
    const heard: Array<[string, CancelReason]> = []
    let notify: () => void = () => {}
    const stop = store.onCancel((runId, reason) => {
      heard.push([runId, reason])
      notify()
    })
    await subscribed()
    await store.publishCancel('r1', 'cancelled')
    t.same(heard, [['r1', 'cancelled']], 'the publishing client hears its own cancel before publishCancel settles')
    const arrived = new Promise<void>((resolve) => { notify = resolve })
    await peer.publishCancel('r2', 'ended')
    await arrived
    // Give a duplicate delivery time to show up before counting.
    await new Promise((resolve) => setTimeout(resolve, 100))
    t.same(heard, [['r1', 'cancelled'], ['r2', 'ended']])
    stop()
    await store.publishCancel('r3', 'cancelled')
    t.equal(heard.length, 2, 'an unsubscribed listener hears nothing more')
  })
}
