import type { Clock, TimerHandle } from '../clock.js'
import { type KeyGrant, type KeyRequest, MAX_TENANT_UNCERTAIN, type TenantKeys, type TenantUncertainty, byAge, tenantKeyId } from './tenant-keys.js'

interface Hold {
  readonly token: string
  until: number
  readonly holder: KeyRequest['holder']
  /** Set while calls wait: fires when the lease passes, in case the holder never releases. */
  timer: TimerHandle | null
}

interface Waiter {
  readonly tenant: string
  readonly key: string
  readonly request: KeyRequest
  readonly resolve: (grant: KeyGrant) => void
  timer: TimerHandle | null
  readonly onAbort: () => void
}

/**
 * Tenant keys in one process: the same semantics as the Redis ones, for the
 * runs of this process. Fencing tokens come from one process-wide counter,
 * so they increase strictly per key and are never reused, without a
 * counter kept per key ever held. Waiters queue per key and are handed the
 * key in arrival order on release, or once a holder's lease has passed.
 */
export class MemoryTenantKeys implements TenantKeys {
  #fence = 0
  readonly #holds = new Map<string, Hold>()
  readonly #queues = new Map<string, Waiter[]>()
  /** Tenant → operation id → its unresolved uncertain write. */
  readonly #uncertain = new Map<string, Map<string, TenantUncertainty>>()
  readonly #clock: Clock
  /** The incarnation (incarnationKey) of the run held under an id, if one is. */
  readonly #incarnationOf: (runId: string) => string | undefined

  readonly #maxUncertain: number

  constructor (clock: Clock, incarnationOf: (runId: string) => string | undefined, maxUncertainPerTenant = MAX_TENANT_UNCERTAIN) {
    this.#clock = clock
    this.#incarnationOf = incarnationOf
    this.#maxUncertain = maxUncertainPerTenant
  }

  async acquireKey (tenant: string, key: string, request: KeyRequest): Promise<KeyGrant> {
    const id = tenantKeyId(tenant, key)
    const queue = this.#queues.get(id)
    const grant = this.#attempt(tenant, key, id, request, queue === undefined || queue.length === 0)
    if (grant !== undefined) return grant
    const signal = request.signal
    if (signal?.aborted === true) return { kind: 'stopped' }
    if (request.waitMs <= 0) return { kind: 'busy' }
    return await new Promise<KeyGrant>((resolve) => {
      const waiter: Waiter = {
        tenant,
        key,
        request,
        resolve,
        timer: null,
        onAbort: () => { this.#leave(id, waiter, { kind: 'stopped' }) }
      }
      waiter.timer = this.#clock.setTimeout(() => {
        waiter.timer = null
        this.#leave(id, waiter, { kind: 'busy' })
      }, request.waitMs)
      signal?.addEventListener('abort', waiter.onAbort, { once: true })
      if (queue === undefined) this.#queues.set(id, [waiter])
      else queue.push(waiter)
      this.#watchLease(id)
    })
  }

  async renewKey (tenant: string, key: string, token: string, leaseMs: number): Promise<boolean> {
    const hold = this.#holds.get(tenantKeyId(tenant, key))
    if (hold?.token !== token || hold.until <= this.#clock.now()) return false
    hold.until = this.#clock.now() + leaseMs
    return true
  }

  async releaseKey (tenant: string, key: string, token: string): Promise<boolean> {
    const id = tenantKeyId(tenant, key)
    const hold = this.#holds.get(id)
    // A lapsed hold is no longer this token's: the key may have been counted a dead holder's.
    if (hold?.token !== token || hold.until <= this.#clock.now()) return false
    this.#drop(id, hold)
    this.#next(id)
    return true
  }

  async noteTenantUncertain (tenant: string, entries: readonly TenantUncertainty[]): Promise<void> {
    if (entries.length === 0) return
    let listed = this.#uncertain.get(tenant)
    if (listed === undefined) this.#uncertain.set(tenant, listed = new Map())
    for (const e of entries) if (!listed.has(e.operationId)) listed.set(e.operationId, { ...e })
    // Listed in the order they were noted: the first is the oldest.
    for (const id of listed.keys()) {
      if (listed.size <= this.#maxUncertain) break
      listed.delete(id)
    }
  }

  async forgetTenantUncertain (tenant: string, operationIds: readonly string[]): Promise<void> {
    const listed = this.#uncertain.get(tenant)
    if (listed === undefined) return
    for (const id of operationIds) listed.delete(id)
    if (listed.size === 0) this.#uncertain.delete(tenant)
  }

  async listTenantUncertain (tenant: string): Promise<TenantUncertainty[]> {
    return this.#held(tenant).map((e) => ({ ...e })).sort(byAge)
  }

  /**
   * A run left the store: its run-scoped writes are forgotten with it. Its
   * tenant-scoped ones stay until resolved: the resource behind the key is
   * the tenant's, and the write may have changed it whatever became of the run.
   */
  forgetRun (tenant: string, runId: string): void {
    const listed = this.#uncertain.get(tenant)
    if (listed === undefined) return
    for (const [id, e] of listed) if (e.runId === runId && !e.tenantScoped) listed.delete(id)
    if (listed.size === 0) this.#uncertain.delete(tenant)
  }

  /**
   * The tenant's entries still listed: tenant-scoped ones, and run-scoped
   * ones whose run's incarnation is held (the others are dropped).
   */
  #held (tenant: string): TenantUncertainty[] {
    const listed = this.#uncertain.get(tenant)
    if (listed === undefined) return []
    const out: TenantUncertainty[] = []
    for (const [id, e] of listed) {
      if (e.tenantScoped || this.#runIsHeld(e)) out.push(e)
      else listed.delete(id)
    }
    if (listed.size === 0) this.#uncertain.delete(tenant)
    return out
  }

  #runIsHeld (e: TenantUncertainty): boolean {
    const held = this.#incarnationOf(e.runId)
    return held !== undefined && (e.incarnation === undefined || e.incarnation === held)
  }

  /** The key's answer now, or undefined when the call must wait (`first`: nobody is ahead of it). */
  #attempt (tenant: string, key: string, id: string, request: KeyRequest, first: boolean): KeyGrant | undefined {
    const now = this.#clock.now()
    let hold = this.#holds.get(id)
    if (hold !== undefined && hold.until <= now) {
      this.#lapsed(tenant, key, id, hold, now)
      hold = undefined
    }
    if (request.holder.write) {
      const by = this.#blocker(tenant, key, request.holder.operationId)
      if (by !== undefined) return { kind: 'uncertain', by: { ...by } }
    }
    if (hold !== undefined || !first) return undefined
    const token = String(++this.#fence)
    this.#holds.set(id, { token, until: now + request.leaseMs, holder: request.holder, timer: null })
    return { kind: 'held', token }
  }

  /** The earliest unresolved uncertain write of another operation on the tenant key. */
  #blocker (tenant: string, key: string, operationId: string): TenantUncertainty | undefined {
    let best: TenantUncertainty | undefined
    for (const e of this.#held(tenant)) {
      if (!e.tenantScoped || e.conflictKey !== key || e.operationId === operationId) continue
      if (best === undefined || byAge(e, best) < 0) best = e
    }
    return best
  }

  /** The holder never released the key before its lease passed: a write's outcome is unknown. */
  #lapsed (tenant: string, key: string, id: string, hold: Hold, now: number): void {
    this.#drop(id, hold)
    const h = hold.holder
    if (!h.write) return
    void this.noteTenantUncertain(tenant, [{ operationId: h.operationId, runId: h.runId, callId: h.callId, tool: h.tool, conflictKey: key, tenantScoped: true, cause: 'replica_lost', since: now }])
  }

  #drop (id: string, hold: Hold): void {
    if (hold.timer !== null) this.#clock.clearTimeout(hold.timer)
    hold.timer = null
    this.#holds.delete(id)
  }

  /** Hands the key to the waiters in order, as long as each is answered at once (held, or blocked by an uncertainty). */
  #next (id: string): void {
    const queue = this.#queues.get(id)
    while (queue !== undefined && queue.length > 0) {
      const waiter = queue[0]!
      const grant = this.#attempt(waiter.tenant, waiter.key, id, waiter.request, true)
      if (grant === undefined) break
      this.#leave(id, waiter, grant, false)
      if (grant.kind === 'held') break
    }
    this.#watchLease(id)
  }

  #leave (id: string, waiter: Waiter, grant: KeyGrant, wakeNext = true): void {
    const queue = this.#queues.get(id)
    const i = queue?.indexOf(waiter) ?? -1
    if (i < 0) return
    queue!.splice(i, 1)
    if (queue!.length === 0) this.#queues.delete(id)
    if (waiter.timer !== null) this.#clock.clearTimeout(waiter.timer)
    waiter.request.signal?.removeEventListener('abort', waiter.onAbort)
    waiter.resolve(grant)
    // The head left without the key: the next one may take it now.
    if (wakeNext && i === 0 && grant.kind !== 'held') this.#next(id)
  }

  /** While calls wait on a held key, wake them when its lease passes (a holder that never releases). */
  #watchLease (id: string): void {
    const hold = this.#holds.get(id)
    if (hold === undefined || hold.timer !== null || !this.#queues.has(id)) return
    hold.timer = this.#clock.setTimeout(() => {
      hold.timer = null
      // Renewed since: watch again until the new end.
      if (hold.until > this.#clock.now()) this.#watchLease(id)
      else this.#next(id)
    }, Math.max(0, hold.until - this.#clock.now()))
  }
}
