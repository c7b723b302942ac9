/**
 * Tenant-scoped conflict keys (SPEC section 17): a key held in the store by
 * one call at a time across every run and replica of a tenant, with a lease
 * and a fencing token, and the tenant's index of unresolved uncertain writes
 * by key. A memory and a Redis implementation share one contract suite
 * (test/store/contract-tenant-keys.test.ts).
 */
import type { StopSignal } from '../schedule/types.js'

/** The call that holds, or asks for, a tenant key: kept with the hold, so a dead holder's write can be named. */
export interface KeyHolder {
  operationId: string
  runId: string
  callId: string
  tool: string
  /** A write: if its holder dies holding the key, its outcome is unknown (`replica_lost`). */
  write: boolean
}

/** An unresolved uncertain write as its tenant sees it (GET /v1/uncertain). */
export interface TenantUncertainty {
  operationId: string
  runId: string
  callId: string
  tool: string
  conflictKey: string | null
  /** Its conflict key is tenant-scoped: it blocks later writes with that key from every run of the tenant. */
  tenantScoped: boolean
  /** Why its outcome is unknown: the call's cause (`timeout`, `http_5xx`…) or `replica_lost`. */
  cause: string
  /** Epoch ms at which it was recorded. */
  since: number
  /**
   * The incarnation of the run that made it (incarnationKey), when known:
   * a run-scoped entry is listed only while that incarnation is held, never
   * under a later run that reuses the id. Not shown to callers.
   */
  incarnation?: string | undefined
}

/**
 * Most unresolved uncertain writes one tenant's list keeps; past that the
 * oldest is dropped. A tenant-scoped one stays until it is resolved, even
 * after its run is gone, so without a bound the list of a tenant that never
 * resolves any would only grow.
 */
export const MAX_TENANT_UNCERTAIN = 10_000

/** What a call asking for a tenant key is given. */
export type KeyGrant =
  /** Held: `token` is the fencing token, a decimal integer, strictly increasing per key. */
  | { kind: 'held', token: string }
  /** Another call held the key (or was ahead in the queue) for the whole wait. */
  | { kind: 'busy' }
  /** A write, and an unresolved uncertain write with the key (not the same operation) blocks it. */
  | { kind: 'uncertain', by: TenantUncertainty }
  /** The signal stopped the wait. */
  | { kind: 'stopped' }

export interface KeyRequest {
  holder: KeyHolder
  /** How long the key is held without renewal (TOOLGATE_LEASE_MS). */
  leaseMs: number
  /** Longest wait in the key's queue (the tool's conflictWaitMs); 0 takes it only when free. */
  waitMs: number
  /** Stops the wait (the batch was cancelled). */
  signal?: StopSignal
}

/**
 * Tenant keys and the tenant's uncertain writes. A key is `tenant` and the
 * resolved conflict key together: tenants never share one.
 */
export interface TenantKeys {
  /**
   * Takes a tenant key, waiting in arrival order (FIFO, across replicas) up
   * to `waitMs`. A held key whose lease passed was held by a call that died:
   * it is free, and a write that held it becomes an unresolved uncertainty
   * of the tenant (cause `replica_lost`). A write is not given the key while
   * such an uncertainty (another operation's) is listed on it.
   */
  acquireKey (tenant: string, key: string, request: KeyRequest): Promise<KeyGrant>
  /** Pushes the lease of a hold on; false when the token no longer holds the key. */
  renewKey (tenant: string, key: string, token: string, leaseMs: number): Promise<boolean>
  /** Frees the key if the token still holds it (and wakes the next waiter); answers whether it did. */
  releaseKey (tenant: string, key: string, token: string): Promise<boolean>
  /** Lists unresolved uncertain writes of the tenant (again: nothing changes for one listed already). */
  noteTenantUncertain (tenant: string, entries: readonly TenantUncertainty[]): Promise<void>
  /** The writes are no longer unresolved (resolved, or dropped from their run). */
  forgetTenantUncertain (tenant: string, operationIds: readonly string[]): Promise<void>
  /**
   * The tenant's unresolved uncertain writes, oldest first: every
   * tenant-scoped one until it is resolved (its run may be gone: it still
   * blocks its key), and the run-scoped ones of runs still held.
   */
  listTenantUncertain (tenant: string): Promise<TenantUncertainty[]>
}

/** The store's name for a tenant key: unambiguous whatever either part holds. */
export function tenantKeyId (tenant: string, key: string): string {
  return `${tenant.length}:${tenant}:${key}`
}

/** Oldest first, then by operation id: the order listings answer in. */
export function byAge (a: TenantUncertainty, b: TenantUncertainty): number {
  return a.since - b.since || (a.operationId < b.operationId ? -1 : a.operationId > b.operationId ? 1 : 0)
}
