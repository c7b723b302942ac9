import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { MemoryStore } from './memory.js'
import { RedisStore } from './redis.js'
import { RedisToolPins } from './redis-tool-pins.js'
import { MemoryToolPins, type ToolPins } from './tool-pins.js'
import type { Store } from './types.js'

/**
 * The store `TOOLGATE_STORE` names: 'memory' (the default, one process) or a
 * redis:// URL shared by replicas. Each is a `ComposedStore` of that
 * backend's parts (run state, batch answers, receipt journal, uncertain
 * writes, cancel bus); a deployment that takes a part from elsewhere builds
 * its own `ComposedStore` from `StoreParts`.
 */
export function createStore (config: Config, logger?: Pick<Logger, 'warn' | 'info'>, clock?: Clock): Store {
  const bounds = {
    runTtlMs: config.runTtlSeconds * 1000,
    maxRuns: config.maxRuns,
    maxRunsPerTenant: config.maxRunsPerTenant,
    maxWaitingPerTenant: config.maxWaitingBatchesPerTenant,
    receiptRetentionMs: config.receiptRetentionSeconds * 1000
  }
  const timed = clock === undefined ? {} : { clock }
  if (config.store === 'memory') return new MemoryStore({ ...bounds, maxReceipts: config.maxReceipts, maxReceiptBytes: config.maxReceiptBytes, maxAnswerBytes: config.maxAnswerBytes, ...timed })
  return new RedisStore({ url: config.store, ...bounds, ...timed, ...(logger === undefined ? {} : { logger }) })
}

/** The pins of the store `TOOLGATE_STORE` names: this process's memory, or the shared Redis. */
export function createToolPins (config: Pick<Config, 'store'>, logger?: Pick<Logger, 'warn' | 'info'>): ToolPins {
  if (config.store === 'memory') return new MemoryToolPins()
  return new RedisToolPins({ url: config.store, ...(logger === undefined ? {} : { logger }) })
}
