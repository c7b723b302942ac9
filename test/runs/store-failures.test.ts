/**
 * Store failures the run service does not pass on are logged, never
 * swallowed: a cancel the store could not publish (the run's stored state
 * still says it, and the store's own metric counts the failure).
 */
import t from 'tap'
import { RunService } from '../../src/runs/service.js'
import { MemoryStore } from '../../src/store/memory.js'
import { StoreUnavailableError } from '../../src/store/types.js'

t.test('a cancel the store could not publish is logged, and ending and cancelling still answer', async (t) => {
  const store = new MemoryStore({ runTtlMs: 60_000, maxRuns: 10, receiptRetentionMs: 1000, maxReceipts: 10, sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  store.publishCancel = async () => { throw new StoreUnavailableError('The Redis store failed: Connection is closed.') }
  const logged: Array<[unknown, string]> = []
  const runs = new RunService({ store, runTtlMs: 60_000, maxConcurrentTools: 4, logger: { warn: (obj: unknown, msg: string) => { logged.push([obj, msg]) } } as never })
  const a = await runs.create('acme', {})
  const b = await runs.create('acme', {})
  t.equal((await runs.cancel('acme', a.runId)).state, 'cancelled')
  t.equal((await runs.end('acme', b.runId)).state, 'ended')
  t.same(logged.map(([obj]) => obj), [
    { runId: a.runId, err: { message: 'The Redis store failed: Connection is closed.' } },
    { runId: b.runId, err: { message: 'The Redis store failed: Connection is closed.' } }
  ])
  t.match(logged[0]![1], /publish a cancel/)
})
