import { performance } from 'node:perf_hooks'
import type { Registry } from 'prom-client'
import { type Store, StoreFullError, StoreUnavailableError } from '../store/types.js'
import { FastCounter } from './counter.js'
import { FastHistogram } from './histogram.js'

/** The store's asynchronous operations, each timed and its failures counted; `onCancel` and `close` pass through. */
const OPERATIONS = [
  'createRun', 'getRun', 'updateRun', 'updateRunWithBatchId', 'endRun', 'getBatch', 'listBatches', 'listRuns', 'completeBatch', 'recordBatch',
  'putReceipt', 'settleReceipt', 'getReceipt', 'listReceipts', 'reviseReceipt',
  'indexUncertain', 'unindexUncertain', 'runOfUncertain', 'countUncertain', 'tryLock', 'unlock',
  'recordWrites', 'pendingWrites', 'takeOverWrites',
  'waitingRuns', 'countRuns', 'publishCancel', 'ready',
  'acquireKey', 'renewKey', 'releaseKey', 'noteTenantUncertain', 'forgetTenantUncertain', 'listTenantUncertain'
] as const satisfies ReadonlyArray<keyof Store>

type Operation = typeof OPERATIONS[number]
type Complete<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : { missing: Exclude<All, Listed> }
/** Adding a method to Store without listing it here (or passing it through) fails the typecheck. */
export const storeOperationsAreComplete: Complete<keyof Store, Operation | 'onCancel' | 'close'> = true

/**
 * The store's metrics, taken from outside it: a Store that times every
 * operation of the one it wraps (`toolgate_store_operation_duration_seconds`),
 * counts the ones that fail (`toolgate_store_errors_total`), and counts the
 * batches whose answer was not stored because their lease had passed to
 * another replica (`toolgate_leases_lost_total`: completeBatch answering false).
 * Methods are looked up on the inner store at each call, so what it is
 * given later (a test's stub) is what runs.
 */
export function meteredStore (inner: Store, registry: Registry): Store {
  const registers = [registry]
  const duration = new FastHistogram({
    name: 'toolgate_store_operation_duration_seconds',
    help: 'Time of each operation of the run store (memory or Redis), by operation.',
    labelName: 'operation',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers
  })
  const errors = new FastCounter({ name: 'toolgate_store_errors_total', help: 'Operations of the run store that failed (unreachable, timed out, refused, full), by operation.', labelNames: ['operation'], registers })
  const leasesLost = new FastCounter({ name: 'toolgate_leases_lost_total', help: "Batches whose answer was not stored because the run's lease had passed to another replica (or the run was gone).", registers })
  for (const op of OPERATIONS) errors.zero([op])

  const store: Record<string, unknown> = {
    onCancel: (listener: Parameters<Store['onCancel']>[0]) => inner.onCancel(listener),
    close: () => inner.close()
  }
  for (const op of OPERATIONS) {
    const label = [op]
    store[op] = (...args: unknown[]): Promise<unknown> => {
      const t0 = performance.now()
      const method = inner[op] as (...a: unknown[]) => Promise<unknown>
      return Reflect.apply(method, inner, args).then((value) => {
        duration.observe((performance.now() - t0) / 1000, op)
        if (op === 'completeBatch' && value === false) leasesLost.inc()
        return value
      }, (err: unknown) => {
        duration.observe((performance.now() - t0) / 1000, op)
        // What the caller's own function threw (a run of another tenant) passes through uncounted.
        if (err instanceof StoreUnavailableError || err instanceof StoreFullError) errors.inc(label)
        throw err
      })
    }
  }
  return store as unknown as Store
}
