/**
 * Store failures no request answers for are logged, never swallowed: a
 * cancel the store could not publish (the run's stored state still says
 * it), a lease it could not renew or release (the store's own metric
 * counts each failure too).
 */
import t from 'tap'
import { LeaseKeeper, releaseAfterFailure, takeLease } from '../../src/runs/lease.js'
import { resolveRunOptions } from '../../src/runs/options.js'
import { newRunRecord } from '../../src/runs/record.js'
import { RunService } from '../../src/runs/service.js'
import { StopSwitch } from '../../src/schedule/types.js'
import { MemoryStore } from '../../src/store/memory.js'
import { StoreUnavailableError } from '../../src/store/types.js'
import { FakeClock } from '../clock.js'

const FAILED = 'The Redis store failed: Connection is closed.'

t.test('a cancel the store could not publish is logged, and ending and cancelling still answer', async (t) => {
  const store = new MemoryStore({ runTtlMs: 60_000, maxRuns: 10, receiptRetentionMs: 1000, maxReceipts: 10, sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  store.publishCancel = async () => { throw new StoreUnavailableError(FAILED) }
  const logged: Array<[unknown, string]> = []
  const runs = new RunService({ store, runTtlMs: 60_000, maxConcurrentTools: 4, logger: { warn: (obj: unknown, msg: string) => { logged.push([obj, msg]) } } as never })
  const a = await runs.create('acme', {})
  const b = await runs.create('acme', {})
  t.equal((await runs.cancel('acme', a.runId)).state, 'cancelled')
  t.equal((await runs.end('acme', b.runId)).state, 'ended')
  t.same(logged.map(([obj]) => obj), [
    { runId: a.runId, err: { message: FAILED } },
    { runId: b.runId, err: { message: FAILED } }
  ])
  t.match(logged[0]![1], /publish a cancel/)
})

t.test('a lease the store cannot renew is logged once per outage, and its batch starts nothing past the lease', async (t) => {
  const clock = new FakeClock()
  const store = new MemoryStore({ runTtlMs: 60_000, maxRuns: 10, receiptRetentionMs: 1000, maxReceipts: 10, clock, sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  const logged: Array<[unknown, string]> = []
  const terms = { replicaId: 'me', leaseMs: 300, clock, logger: { warn: (obj: unknown, msg: string) => { logged.push([obj, msg]) } } as never }
  const keeper = new LeaseKeeper(store, terms)
  t.teardown(() => keeper.close())
  const run = newRunRecord('r1', 'acme', resolveRunOptions({}, 4), clock.now())
  takeLease(run, 'b1', terms, clock.now())
  await store.createRun(run)
  const controller = new StopSwitch(clock)
  keeper.keep(run, { controller, batchId: 'b1' })
  const working = store.updateRun.bind(store)
  const failing = async (): Promise<never> => { throw new StoreUnavailableError(FAILED) }

  store.updateRun = failing
  // Renewals every 100 ms: two fail, one line.
  await clock.pass(200)
  t.same(logged.map(([obj]) => obj), [{ runId: 'r1', batchId: 'b1', err: { message: FAILED } }])
  t.match(logged[0]![1], /renew a lease/)
  t.equal(controller.aborted, false, 'within its lease (less the margin), the batch may still start calls')
  await clock.pass(25)
  t.equal(controller.aborted, true, 'past it, nothing more starts')
  t.equal(controller.reason, 'lease_lost')

  store.updateRun = working
  await clock.pass(100)
  store.updateRun = failing
  await clock.pass(100)
  t.equal(logged.length, 2, 'a renewal that succeeded ends the outage: the next failure is logged again')
})

t.test("a failed batch's lease the store cannot release is logged, and left to expire", async (t) => {
  const store = new MemoryStore({ runTtlMs: 60_000, maxRuns: 10, receiptRetentionMs: 1000, maxReceipts: 10, sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  store.updateRun = async () => { throw new StoreUnavailableError(FAILED) }
  const logged: Array<[unknown, string]> = []
  await releaseAfterFailure(store, 'r1', 'b1', { warn: (obj: unknown, msg: string) => { logged.push([obj, msg]) } } as never)
  t.same(logged.map(([obj]) => obj), [{ runId: 'r1', batchId: 'b1', err: { message: FAILED } }])
  t.match(logged[0]![1], /release the lease/)
})
