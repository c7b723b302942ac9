/**
 * Tenant-scoped conflict keys around a call's dispatch (SPEC section 17):
 * the key is taken in the store before the call is sent (waiting in arrival
 * order up to the tool's conflictWaitMs), its lease renewed while the call
 * runs, and released once the call has its answer; a write whose outcome is
 * unknown is listed on the key before the key is freed, so no later write
 * with the key, from any run, slips in between.
 */
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { StopSignal } from '../schedule/types.js'
import type { KeyGrant, Store, TenantUncertainty } from '../store/types.js'
import { StoreUnavailableError } from '../store/types.js'
import type { ConflictMetrics } from './metrics.js'

/** A call about to take its tenant key. */
export interface KeyedCall {
  tenant: string
  runId: string
  callId: string
  operationId: string
  tool: string
  conflictKey: string
  write: boolean
  /** The tool's conflictWaitMs. */
  waitMs: number
}

/** What the call gets before it is sent: the key (with its fencing token and its release), or why not. */
export type Entry =
  | { kind: 'held', token: string, leave: (outcome: { uncertain: boolean, cause?: string | undefined }) => Promise<void> }
  | Exclude<KeyGrant, { kind: 'held' }>
  /** The store could not be reached: the call is not sent. */
  | { kind: 'unavailable' }

export interface TenantKeyGateOptions {
  store: Store
  /** How long a key is held without renewal (TOOLGATE_LEASE_MS); renewed every third of it. */
  leaseMs: number
  clock: Clock
  metrics: ConflictMetrics
  logger?: Pick<Logger, 'warn'> | undefined
}

/** One per app instance: every batch's tenant-keyed calls pass through it. */
export class TenantKeyGate {
  readonly #opts: TenantKeyGateOptions

  constructor (opts: TenantKeyGateOptions) {
    this.#opts = opts
  }

  /** Takes the call's key, or answers why it must not be sent. */
  async enter (call: KeyedCall, signal?: StopSignal): Promise<Entry> {
    const { store, leaseMs, metrics } = this.#opts
    const t0 = performance.now()
    let grant: KeyGrant
    try {
      grant = await store.acquireKey(call.tenant, call.conflictKey, {
        holder: { operationId: call.operationId, runId: call.runId, callId: call.callId, tool: call.tool, write: call.write },
        leaseMs,
        waitMs: call.waitMs,
        ...(signal === undefined ? {} : { signal })
      })
    } catch (err) {
      if (err instanceof StoreUnavailableError) return { kind: 'unavailable' }
      throw err
    }
    metrics.waited((performance.now() - t0) / 1000)
    if (grant.kind !== 'held') {
      if (grant.kind !== 'stopped') metrics.blocked(call.tool)
      return grant
    }
    return { kind: 'held', token: grant.token, leave: this.#holding(call, grant.token) }
  }

  /** Renews the hold while the call runs; answers how to end it. */
  #holding (call: KeyedCall, token: string): (outcome: { uncertain: boolean, cause?: string | undefined }) => Promise<void> {
    const { store, leaseMs, clock } = this.#opts
    const warn = (message: string, err?: unknown): void => {
      this.#opts.logger?.warn({ runId: call.runId, callId: call.callId, operationId: call.operationId, tool: call.tool, ...(err === undefined ? {} : { err: { message: (err as Error).message } }) }, message)
    }
    const timer = clock.setInterval(() => {
      store.renewKey(call.tenant, call.conflictKey, token, leaseMs).then(
        (kept) => { if (!kept) warn('tenant key lost while its call ran: its lease passed before renewal') },
        (err: unknown) => { warn('tenant key could not be renewed', err) })
    }, Math.max(1, Math.floor(leaseMs / 3)))
    return async (outcome) => {
      clock.clearInterval(timer)
      try {
        if (outcome.uncertain && call.write) await store.noteTenantUncertain(call.tenant, [this.#uncertainty(call, outcome.cause)])
        const released = await store.releaseKey(call.tenant, call.conflictKey, token)
        // The lease passed while the call ran and the next caller counted the write as lost; its answer says otherwise.
        if (!released && !outcome.uncertain && call.write) await store.forgetTenantUncertain(call.tenant, [call.operationId])
      } catch (err) {
        // The lease frees the key; a write is then counted lost (replica_lost), the safe side.
        warn('tenant key could not be released; it is free once its lease passes', err)
      }
    }
  }

  #uncertainty (call: KeyedCall, cause: string | undefined): TenantUncertainty {
    return {
      operationId: call.operationId,
      runId: call.runId,
      callId: call.callId,
      tool: call.tool,
      conflictKey: call.conflictKey,
      tenantScoped: true,
      cause: cause ?? 'unknown',
      since: this.#opts.clock.now()
    }
  }
}
