/**
 * The TenantKeys contract (src/store/tenant-keys.ts, SPEC section 17)
 * against the memory store and the Redis store alike: a tenant key held by
 * one call at a time with a fencing token strictly increasing per key and
 * never reused, waiters served in arrival order up to their wait, leases
 * renewed and lapsing (a dead holder's write becomes an unresolved
 * uncertainty, `replica_lost`), and the tenant's uncertain writes by key.
 */
import type { Test } from 'tap'
import type { KeyGrant, KeyHolder, KeyRequest, TenantUncertainty } from '../../src/store/tenant-keys.js'
import { StopSwitch } from '../../src/schedule/types.js'
import { type Harness, againstEveryStore, makeRun } from './harness.js'

await againstEveryStore('TenantKeys contract', contract)

function holder (operationId: string, over: Partial<KeyHolder> = {}): KeyHolder {
  return { operationId, runId: 'r1', callId: `call_${operationId}`, tool: 'edit', write: true, ...over }
}

function request (operationId: string, over: Partial<KeyRequest> = {}, who: Partial<KeyHolder> = {}): KeyRequest {
  return { holder: holder(operationId, who), leaseMs: 60_000, waitMs: 0, ...over }
}

function entry (operationId: string, over: Partial<TenantUncertainty> = {}): TenantUncertainty {
  return { operationId, runId: 'r1', callId: `call_${operationId}`, tool: 'edit', conflictKey: 'file:a', tenantScoped: true, cause: 'timeout', since: 1_800_000_000_000, ...over }
}

function tokenOf (grant: KeyGrant): bigint {
  if (grant.kind !== 'held') throw new Error(`expected the key to be held, got ${grant.kind}`)
  return BigInt(grant.token)
}

async function contract (t: Test, h: Harness): Promise<void> {
  t.jobs = 3

  t.test('a free key is held with a decimal fencing token; while held another call is busy; released, the next token is larger', async (t) => {
    const { store, peer } = await h.open(t)
    const first = await store.acquireKey('acme', 'file:a', request('op_1'))
    t.equal(first.kind, 'held')
    t.match((first as { token: string }).token, /^[1-9][0-9]*$/)
    t.same(await peer.acquireKey('acme', 'file:a', request('op_2')), { kind: 'busy' }, 'another replica finds it busy')
    t.equal((await peer.acquireKey('acme', 'file:b', request('op_3'))).kind, 'held', 'another key is free')
    t.equal((await peer.acquireKey('other', 'file:a', request('op_4'))).kind, 'held', "another tenant's key of the same name is free")
    t.equal(await peer.releaseKey('acme', 'file:a', '999999999'), false, 'a token that does not hold the key frees nothing')
    t.equal(await store.releaseKey('acme', 'file:a', (first as { token: string }).token), true)
    t.equal(await store.releaseKey('acme', 'file:a', (first as { token: string }).token), false, 'released once')
    const second = await peer.acquireKey('acme', 'file:a', request('op_2'))
    t.ok(tokenOf(second) > tokenOf(first))
  })

  t.test('tokens strictly increase per key across releases and lapsed leases: never reused', async (t) => {
    const { store, peer, advance } = await h.open(t)
    let last = 0n
    for (let i = 0; i < 6; i++) {
      const s = i % 2 === 0 ? store : peer
      const g = await s.acquireKey('acme', 'k', request(`op_${i}`, { leaseMs: h.ttl.short }, { write: false }))
      const token = tokenOf(g)
      t.ok(token > last, `token ${token} follows ${last}`)
      last = token
      if (i % 3 === 0) await advance(h.ttl.short + 50)
      else await s.releaseKey('acme', 'k', String(token))
    }
  })

  t.test('waiters are served in arrival order, each when the one before releases', async (t) => {
    const { store, peer, advance } = await h.open(t)
    const held = await store.acquireKey('acme', 'k', request('op_0'))
    const order: string[] = []
    const waits: Array<Promise<KeyGrant>> = []
    for (const [i, s] of [store, peer, store, peer].entries()) {
      waits.push(s.acquireKey('acme', 'k', request(`op_${i + 1}`, { waitMs: 20_000 })).then((g) => {
        order.push(`op_${i + 1}`)
        return g
      }))
      await advance(40)
    }
    let token = (held as { token: string }).token
    let previous = tokenOf(held)
    for (let i = 0; i < 4; i++) {
      const s = i % 2 === 0 ? store : peer
      await s.releaseKey('acme', 'k', token)
      const g = await waits[i]!
      t.ok(tokenOf(g) > previous)
      previous = tokenOf(g)
      token = String(previous)
      t.same(order, waits.slice(0, i + 1).map((_, j) => `op_${j + 1}`), `op_${i + 1} is next`)
    }
    await store.releaseKey('acme', 'k', token)
  })

  t.test('a waiter gives up after its wait (busy) and leaves the queue: the one behind it is next', async (t) => {
    const { store, peer, advance } = await h.open(t)
    const held = await store.acquireKey('acme', 'k', request('op_0'))
    const short = peer.acquireKey('acme', 'k', request('op_1', { waitMs: h.ttl.short }))
    await advance(40)
    const long = store.acquireKey('acme', 'k', request('op_2', { waitMs: 60_000 }))
    await advance(h.ttl.short + 100)
    t.same(await short, { kind: 'busy' })
    await store.releaseKey('acme', 'k', (held as { token: string }).token)
    t.equal((await long).kind, 'held')
  })

  t.test('a stopped signal ends a wait: stopped', async (t) => {
    const { store, peer, advance } = await h.open(t)
    await store.acquireKey('acme', 'k', request('op_0'))
    const stop = new StopSwitch()
    const waiting = peer.acquireKey('acme', 'k', request('op_1', { waitMs: 60_000, signal: stop }))
    await advance(40)
    stop.abort('cancelled')
    t.same(await waiting, { kind: 'stopped' })
  })

  t.test('renewal keeps a key held past its first lease; a lapsed hold cannot be renewed or released', async (t) => {
    const { store, peer, advance } = await h.open(t)
    const lease = h.ttl.long
    const g = await store.acquireKey('acme', 'k', request('op_0', { leaseMs: lease }, { write: false }))
    const token = (g as { token: string }).token
    await advance(lease * 2 / 3)
    t.equal(await store.renewKey('acme', 'k', token, lease), true)
    await advance(lease * 2 / 3)
    t.same(await peer.acquireKey('acme', 'k', request('op_1')), { kind: 'busy' }, 'still held past the first lease')
    await advance(lease + 100)
    t.equal(await store.renewKey('acme', 'k', token, lease), false, 'lapsed: not renewed')
    t.equal(await store.releaseKey('acme', 'k', token), false, 'lapsed: not released')
    t.equal((await peer.acquireKey('acme', 'k', request('op_1'))).kind, 'held')
  })

  t.test("a dead holder's write: its lease passes, the key is free, and the write is an unresolved uncertainty (replica_lost) that blocks later writes with the key, not reads", async (t) => {
    const { store, peer, now, advance } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.acquireKey('acme', 'file:a', request('op_dead', { leaseMs: h.ttl.short }))
    // A waiter on another replica gets its answer once the lease passes, without a release.
    const waiting = peer.acquireKey('acme', 'file:a', request('op_next', { waitMs: 60_000 }, { runId: 'r2' }))
    await advance(h.ttl.short + 100)
    const blocked = await waiting
    t.equal(blocked.kind, 'uncertain')
    t.match((blocked as { by: TenantUncertainty }).by, { operationId: 'op_dead', runId: 'r1', callId: 'call_op_dead', tool: 'edit', conflictKey: 'file:a', tenantScoped: true, cause: 'replica_lost' })
    t.match(await peer.listTenantUncertain('acme'), [{ operationId: 'op_dead', cause: 'replica_lost' }])
    const read = await peer.acquireKey('acme', 'file:a', request('op_read', {}, { write: false }))
    t.equal(read.kind, 'held', 'a read is not blocked')
    await peer.releaseKey('acme', 'file:a', (read as { token: string }).token)
    t.equal((await store.acquireKey('acme', 'file:a', request('op_dead'))).kind, 'held', 'the same operation (an idempotent retry) is not blocked by itself')
  })

  t.test("the tenant's uncertain writes: listed oldest first, once; a tenant-scoped one blocks writes with its key until forgotten, even once its run is gone; a run-scoped one goes with its run", async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    await store.createRun(makeRun('r2', now()))
    await store.noteTenantUncertain('acme', [
      entry('op_b', { since: 1_800_000_000_002 }),
      entry('op_a', { since: 1_800_000_000_001, runId: 'r2', conflictKey: null, tenantScoped: false }),
      entry('op_c', { since: 1_800_000_000_003, conflictKey: 'file:c', tenantScoped: false }),
      entry('op_gone', { since: 1_800_000_000_004, runId: 'r_gone', conflictKey: 'file:g' }),
      entry('op_gone_run', { since: 1_800_000_000_005, runId: 'r_gone', conflictKey: 'file:h', tenantScoped: false })
    ])
    await store.noteTenantUncertain('acme', [entry('op_b', { since: 1 })])
    t.same(await peer.listTenantUncertain('acme'), [
      entry('op_a', { since: 1_800_000_000_001, runId: 'r2', conflictKey: null, tenantScoped: false }),
      entry('op_b', { since: 1_800_000_000_002 }),
      entry('op_c', { since: 1_800_000_000_003, conflictKey: 'file:c', tenantScoped: false }),
      entry('op_gone', { since: 1_800_000_000_004, runId: 'r_gone', conflictKey: 'file:g' })
    ], 'the run-scoped write of a gone run is dropped; the tenant-scoped one stays')
    t.same(await peer.acquireKey('acme', 'file:g', request('op_g2', {}, { runId: 'r2' })), { kind: 'uncertain', by: entry('op_gone', { since: 1_800_000_000_004, runId: 'r_gone', conflictKey: 'file:g' }) },
      'a tenant-scoped write whose run is gone still blocks its key')
    t.same(await peer.listTenantUncertain('other'), [], 'another tenant sees none')
    const blocked = await peer.acquireKey('acme', 'file:a', request('op_new', {}, { runId: 'r2' }))
    t.same(blocked, { kind: 'uncertain', by: entry('op_b', { since: 1_800_000_000_002 }) })
    t.equal((await peer.acquireKey('acme', 'file:c', request('op_c2'))).kind, 'held', 'a run-scoped key blocks nothing across runs')
    t.equal((await peer.acquireKey('other', 'file:a', request('op_x'))).kind, 'held', "another tenant's key is not blocked")
    await store.forgetTenantUncertain('acme', ['op_b', 'op_never'])
    t.equal((await peer.acquireKey('acme', 'file:a', request('op_new'))).kind, 'held', 'resolved: the key is free')
    t.same((await store.listTenantUncertain('acme')).map((e) => e.operationId), ['op_a', 'op_c', 'op_gone'])
    await store.forgetTenantUncertain('acme', ['op_gone'])
    t.equal((await peer.acquireKey('acme', 'file:g', request('op_g3'))).kind, 'held', 'resolved by hand: the key of the gone run is free')
  })

  t.test("a run-scoped uncertain write is listed while its run's incarnation is held, not under a later run of the same id", async (t) => {
    const { store, peer, now } = await h.open(t)
    const run = makeRun('r1', now())
    await store.createRun(run)
    const mine = `${run.createdAt} ${run.tenant}`
    await store.noteTenantUncertain('acme', [
      entry('op_mine', { since: 1_800_000_000_001, conflictKey: null, tenantScoped: false, incarnation: mine }),
      entry('op_earlier', { since: 1_800_000_000_002, conflictKey: null, tenantScoped: false, incarnation: `${run.createdAt - 60_000} ${run.tenant}` }),
      entry('op_other_tenant', { since: 1_800_000_000_003, conflictKey: null, tenantScoped: false, incarnation: `${run.createdAt} beta` }),
      entry('op_keyed', { since: 1_800_000_000_004, incarnation: `${run.createdAt - 60_000} ${run.tenant}` })
    ])
    t.same((await peer.listTenantUncertain('acme')).map((e) => e.operationId), ['op_mine', 'op_keyed'],
      "an earlier incarnation's run-scoped writes are not listed under this run; a tenant-scoped one stays whatever became of its run")
  })

  t.test("past the tenant's bound the oldest uncertain writes are dropped", async (t) => {
    const { store, peer, now } = await h.open(t, { maxUncertainPerTenant: 3 })
    await store.createRun(makeRun('r1', now()))
    await store.noteTenantUncertain('acme', [entry('op_1', { since: 1_800_000_000_001 }), entry('op_2', { since: 1_800_000_000_002 })])
    await store.noteTenantUncertain('acme', [entry('op_3', { since: 1_800_000_000_003 }), entry('op_4', { since: 1_800_000_000_004, conflictKey: 'file:b' })])
    t.same((await peer.listTenantUncertain('acme')).map((e) => e.operationId), ['op_2', 'op_3', 'op_4'])
    await store.forgetTenantUncertain('acme', ['op_3'])
    await store.noteTenantUncertain('acme', [entry('op_5', { since: 1_800_000_000_005 })])
    t.same((await peer.listTenantUncertain('acme')).map((e) => e.operationId), ['op_2', 'op_4', 'op_5'], 'a forgotten one leaves room')
  })
}
