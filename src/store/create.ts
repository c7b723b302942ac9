import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { MemoryStore } from './memory.js'
import { RedisStore } from './redis.js'
import type { Store } from './types.js'

/** The store `TOOLGATE_STORE` names: 'memory' (the default, one process) or a redis:// URL shared by replicas. */
export function createStore (config: Config, logger?: Pick<Logger, 'warn' | 'info'>): Store {
  const bounds = {
    runTtlMs: config.runTtlSeconds * 1000,
    maxRuns: config.maxRuns,
    receiptRetentionMs: config.receiptRetentionSeconds * 1000
  }
  if (config.store === 'memory') return new MemoryStore({ ...bounds, maxReceipts: config.maxReceipts })
  return new RedisStore({ url: config.store, ...bounds, ...(logger === undefined ? {} : { logger }) })
}
