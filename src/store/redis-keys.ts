import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { RedisConnection } from './redis-connection.js'
import { ACQUIRE_KEY, FORGET_UNCERTAIN, LEAVE_QUEUE, LIST_UNCERTAIN, NOTE_UNCERTAIN, RELEASE_KEY, RENEW_KEY } from './redis-keys-scripts.js'
import { type KeyGrant, type KeyRequest, MAX_TENANT_UNCERTAIN, type TenantKeys, type TenantUncertainty, byAge, tenantKeyId } from './tenant-keys.js'

/** First pause of a waiter between two attempts; it doubles up to POLL_MAX_MS. */
export const POLL_MIN_MS = 5
export const POLL_MAX_MS = 100
/** A waiter not heard from this long is dropped from its queue (its replica died): many polls' worth. */
const WAITER_HEARTBEAT_MS = 2000

/**
 * Tenant keys in Redis, one script per step. A waiter asks again by short
 * polling (5 ms doubling to 100 ms, so at most about ten scripts a second per
 * waiting call), and is woken at once by a release on its own replica.
 * Polling rather than pub/sub: pub/sub delivers at most once, so a waiter
 * would poll anyway to survive a lost message or a holder whose lease
 * passes (no one publishes then), and it would need a subscription per key
 * on the cancel bus's connection; the queue in Redis keeps the order
 * whoever polls first.
 */
export class RedisTenantKeys implements TenantKeys {
  readonly #conn: RedisConnection
  /** A hold outlives its lease by this long, so the next caller finds a dead holder's write (runs live this long). */
  readonly #slackMs: number
  /** Waiters of this replica by key id: a release here wakes them before their next poll. */
  readonly #local = new Map<string, Set<() => void>>()

  /** Most unresolved uncertain writes a tenant's list keeps. */
  readonly #maxUncertain: number

  constructor (conn: RedisConnection, opts: { runTtlMs: number, maxUncertainPerTenant?: number }) {
    this.#conn = conn
    this.#slackMs = opts.runTtlMs
    this.#maxUncertain = opts.maxUncertainPerTenant ?? MAX_TENANT_UNCERTAIN
  }

  async acquireKey (tenant: string, key: string, request: KeyRequest): Promise<KeyGrant> {
    const id = tenantKeyId(tenant, key)
    const waiter = randomUUID()
    const deadline = performance.now() + request.waitMs
    let pause = POLL_MIN_MS
    const signal = request.signal
    for (;;) {
      const grant = await this.#attempt(tenant, key, id, waiter, request)
      if (grant !== undefined) return grant
      const left = deadline - performance.now()
      if (left <= 0 || signal?.aborted === true) {
        await this.#conn.eval(LEAVE_QUEUE, [this.#conn.key('tqueue', id)], [waiter, this.#conn.key('twait', waiter)])
        return signal?.aborted === true ? { kind: 'stopped' } : { kind: 'busy' }
      }
      await this.#pause(id, Math.min(pause, left), request)
      pause = Math.min(pause * 2, POLL_MAX_MS)
    }
  }

  async #attempt (tenant: string, key: string, id: string, waiter: string, request: KeyRequest): Promise<KeyGrant | undefined> {
    const conn = this.#conn
    const h = request.holder
    const answer = await conn.eval(ACQUIRE_KEY,
      [conn.key('tkey', id), conn.key('tfence', id), conn.key('tqueue', id), conn.key('tunck', id), conn.key('tunc', tenant), conn.key('tunca', tenant)],
      [waiter, request.leaseMs, h.operationId, h.runId, h.callId, h.tool, h.write ? 1 : 0, request.waitMs > 0 ? 1 : 0,
        WAITER_HEARTBEAT_MS, conn.key('twait', ''), key, this.#slackMs]) as [string, string?]
    if (answer[0] === 'held') return { kind: 'held', token: answer[1]! }
    if (answer[0] === 'uncertain') return { kind: 'uncertain', by: JSON.parse(answer[1]!) as TenantUncertainty }
    return undefined
  }

  /** Waits `ms`, or less when a release on this replica or the signal wakes it. */
  #pause (id: string, ms: number, request: KeyRequest): Promise<void> {
    return new Promise((resolve) => {
      let waiters = this.#local.get(id)
      if (waiters === undefined) this.#local.set(id, waiters = new Set())
      const wake = (): void => {
        clearTimeout(timer)
        request.signal?.removeEventListener('abort', wake)
        const set = this.#local.get(id)
        set?.delete(wake)
        if (set?.size === 0) this.#local.delete(id)
        resolve()
      }
      const timer = setTimeout(wake, ms)
      waiters.add(wake)
      request.signal?.addEventListener('abort', wake, { once: true })
    })
  }

  async renewKey (tenant: string, key: string, token: string, leaseMs: number): Promise<boolean> {
    return (await this.#conn.eval(RENEW_KEY, [this.#conn.key('tkey', tenantKeyId(tenant, key))], [token, leaseMs, this.#slackMs])) === 1
  }

  async releaseKey (tenant: string, key: string, token: string): Promise<boolean> {
    const id = tenantKeyId(tenant, key)
    const released = (await this.#conn.eval(RELEASE_KEY, [this.#conn.key('tkey', id)], [token])) === 1
    // Every local waiter asks again: the queue in Redis decides which of them (or another replica's) is next.
    const local = this.#local.get(id)
    if (local !== undefined) for (const wake of [...local]) wake()
    return released
  }

  async noteTenantUncertain (tenant: string, entries: readonly TenantUncertainty[]): Promise<void> {
    if (entries.length === 0) return
    const conn = this.#conn
    const args: Array<string | number> = [this.#maxUncertain]
    for (const e of entries) {
      args.push(e.operationId, JSON.stringify(e), e.tenantScoped && e.conflictKey !== null ? conn.key('tunck', tenantKeyId(tenant, e.conflictKey)) : '')
    }
    const dropped = await conn.eval(NOTE_UNCERTAIN, [conn.key('tunc', tenant), conn.key('tunca', tenant)], args) as number
    if (dropped > 0) conn.logger?.warn({ tenant, dropped, limit: this.#maxUncertain }, 'too many unresolved uncertain writes for one tenant: the oldest are no longer kept')
  }

  async forgetTenantUncertain (tenant: string, operationIds: readonly string[]): Promise<void> {
    if (operationIds.length === 0) return
    await this.#conn.eval(FORGET_UNCERTAIN, [this.#conn.key('tunc', tenant), this.#conn.key('tunca', tenant)], [...operationIds])
  }

  async listTenantUncertain (tenant: string): Promise<TenantUncertainty[]> {
    const raw = await this.#conn.eval(LIST_UNCERTAIN, [this.#conn.key('tunc', tenant), this.#conn.key('tunca', tenant)], [this.#conn.key('run', '')]) as string[]
    return raw.map((text) => JSON.parse(text) as TenantUncertainty).sort(byAge)
  }
}
