/**
 * The runs quota per tenant (TOOLGATE_MAX_RUNS_PER_TENANT, SPEC section 19),
 * in every store: a tenant at its quota is refused a run, never evicts
 * another tenant's, makes room by evicting its own ended run, and gets room
 * again as its runs go.
 */
import type { Test } from 'tap'
import { TenantRunsQuotaError } from '../../src/store/types.js'
import { type Harness, againstEveryStore, makeRun } from './harness.js'

await againstEveryStore('runs per tenant', contract)

async function contract (t: Test, h: Harness): Promise<void> {
  t.jobs = 2
  t.test('a tenant at its quota is refused a run, and no other tenant is', async (t) => {
    const { store, peer, now } = await h.open(t, { maxRunsPerTenant: 2 })
    t.equal(await store.createRun(makeRun('a1', now(), { tenant: 'acme' })), true)
    t.equal(await peer.createRun(makeRun('a2', now(), { tenant: 'acme' })), true)
    await t.rejects(store.createRun(makeRun('a3', now(), { tenant: 'acme' })), TenantRunsQuotaError)
    t.equal(await store.getRun('a3'), undefined, 'nothing was stored')
    t.equal(await peer.createRun(makeRun('b1', now(), { tenant: 'beta' })), true, 'another tenant creates runs as before')
    t.equal(await store.createRun(makeRun('a1', now(), { tenant: 'acme' })), false, 'an id that exists is answered as before')
  })

  t.test("a tenant at its quota evicts none of the other tenants' runs, even with the store full", async (t) => {
    const { store, now } = await h.open(t, { maxRuns: 3, maxRunsPerTenant: 2 })
    await store.createRun(makeRun('b1', now(), { tenant: 'beta' }))
    await store.createRun(makeRun('a1', now() + 1, { tenant: 'acme' }))
    await store.createRun(makeRun('a2', now() + 2, { tenant: 'acme' }))
    await t.rejects(store.createRun(makeRun('a3', now() + 3, { tenant: 'acme' })), TenantRunsQuotaError)
    t.equal((await store.getRun('b1'))?.tenant, 'beta', "the other tenant's idle run is still there")
  })

  t.test("a tenant at its quota makes room with its own ended run (not a cancelled one); another tenant's ended run stays", async (t) => {
    const { store, peer, now } = await h.open(t, { maxRunsPerTenant: 3 })
    const at = now()
    await store.createRun(makeRun('b-ended', at, { tenant: 'beta', state: 'ended', terminationReason: 'ended' }))
    await store.createRun(makeRun('a-cancelled', at + 1, { tenant: 'acme', state: 'cancelled', terminationReason: 'cancelled' }))
    await store.createRun(makeRun('a-ended', at + 2, { tenant: 'acme', state: 'ended', terminationReason: 'ended' }))
    await store.createRun(makeRun('a-active', at + 3, { tenant: 'acme' }))
    t.equal(await peer.createRun(makeRun('a-new', at + 4, { tenant: 'acme' })), true, 'room was made')
    t.equal(await store.getRun('a-ended'), undefined, 'by its ended run')
    t.equal((await store.getRun('a-cancelled'))?.state, 'cancelled', 'a cancelled run stays')
    t.equal((await store.getRun('a-active'))?.state, 'active')
    t.equal((await store.getRun('b-ended'))?.tenant, 'beta', "another tenant's ended run stays")
    await t.rejects(store.createRun(makeRun('a-more', at + 5, { tenant: 'acme' })), TenantRunsQuotaError, 'no ended run left: refused')
  })

  t.test('runs that expired give their tenant room again', async (t) => {
    const ttl = h.ttl.short
    const { store, now, advance } = await h.open(t, { runTtlMs: ttl, maxRunsPerTenant: 1 })
    await store.createRun(makeRun('a1', now(), { tenant: 'acme' }))
    await t.rejects(store.createRun(makeRun('a2', now(), { tenant: 'acme' })), TenantRunsQuotaError)
    await advance(ttl * 1.2)
    t.equal(await store.createRun(makeRun('a2', now(), { tenant: 'acme' })), true)
  })

  t.test("a run evicted for another tenant's run no longer counts toward its own tenant's quota", async (t) => {
    const { store, now } = await h.open(t, { maxRuns: 2, maxRunsPerTenant: 1 })
    await store.createRun(makeRun('a1', now(), { tenant: 'acme' }))
    await store.createRun(makeRun('b1', now() + 1, { tenant: 'beta' }))
    await store.createRun(makeRun('c1', now() + 2, { tenant: 'gamma' }))
    t.equal(await store.getRun('a1'), undefined, 'the least recently used run was evicted')
    t.equal(await store.createRun(makeRun('a2', now() + 3, { tenant: 'acme' })), true)
  })
}
