/**
 * The store's listings (a tenant's runs, a run's finished batches), run
 * against the memory store and the Redis store alike, as the contract is.
 */
import type { Test } from 'tap'
import type { BatchRecord, RunCursor, Store } from '../../src/store/types.js'
import { type Harness, againstEveryStore, makeRun } from './harness.js'

await againstEveryStore('store listing', listing)

/** Every page of a tenant's runs, as run ids in the order listed. */
async function allPages (store: Store, tenant: string, limit: number): Promise<string[][]> {
  const pages: string[][] = []
  let after: RunCursor | undefined
  do {
    const page = await store.listRuns(tenant, limit, after)
    pages.push(page.runs.map((r) => r.runId))
    after = page.next ?? undefined
  } while (after !== undefined && pages.length < 50)
  return pages
}

async function completed (store: Store, runId: string, record: BatchRecord, now: number): Promise<void> {
  await store.updateRun(runId, (run) => { run.inFlight = { batchId: record.batchId, owner: 'replica-a', leaseExpiresAt: now + 60_000 } })
  if (!await store.completeBatch(runId, 'replica-a', record)) throw new Error('the batch was not stored')
}

async function listing (t: Test, h: Harness): Promise<void> {
  t.jobs = 4

  t.test("a tenant lists only its own runs, most recently used first, in pages that neither repeat nor miss one", async (t) => {
    const { store, peer, now, advance } = await h.open(t)
    for (const id of ['a1', 'a2', 'a3', 'a4', 'a5']) {
      await store.createRun(makeRun(id, now()))
      await advance(5)
    }
    await store.createRun(makeRun('b1', now(), { tenant: 'other' }))
    await advance(5)
    await store.updateRun('a2', (run) => { run.counters.turns++ })
    t.same(await allPages(peer, 'acme', 2), [['a2', 'a5'], ['a4', 'a3'], ['a1']])
    t.same(await allPages(peer, 'acme', 10), [['a2', 'a5', 'a4', 'a3', 'a1']])
    t.same(await allPages(store, 'other', 10), [['b1']])
    t.same(await store.listRuns('nobody', 10), { runs: [], next: null })
    const [first] = (await store.listRuns('acme', 1)).runs
    t.same(first, await store.getRun('a2'), 'the records are the runs as stored')
  })

  t.test('runs used at the same moment are paged by id, none lost', async (t) => {
    const { store, now } = await h.open(t)
    const at = now()
    // Created in one step: same recency (the memory clock stands still; Redis scores may tie).
    for (const id of ['m1', 'm2', 'm3', 'm4']) await store.createRun(makeRun(id, at))
    const pages = await allPages(store, 'acme', 1)
    t.same(pages.flat().sort(), ['m1', 'm2', 'm3', 'm4'])
    t.equal(pages.length, 4)
  })

  t.test('ended runs are listed with their state; expired runs are not', async (t) => {
    const { store, now, advance } = await h.open(t, { runTtlMs: h.ttl.short })
    await store.createRun(makeRun('old', now()))
    await advance(h.ttl.short / 2)
    await store.createRun(makeRun('done', now()))
    await store.endRun('done', now())
    await advance(h.ttl.short / 2 + 50)
    const page = await store.listRuns('acme', 10)
    t.same(page.runs.map((r) => [r.runId, r.state]), [['done', 'ended']])
  })

  t.test('an evicted run leaves the list', async (t) => {
    const { store, now, advance } = await h.open(t, { maxRuns: 2 })
    await store.createRun(makeRun('e1', now()))
    await advance(5)
    await store.createRun(makeRun('e2', now()))
    await advance(5)
    await store.createRun(makeRun('e3', now()))
    t.same((await store.listRuns('acme', 10)).runs.map((r) => r.runId), ['e3', 'e2'])
  })

  t.test("a run's finished batches are listed with their turn, call count and statuses, not the batch in flight", async (t) => {
    const { store, peer, now } = await h.open(t)
    await store.createRun(makeRun('r1', now()))
    const at = now()
    await completed(store, 'r1', { batchId: 'b1', requestHash: 'h1', responseJson: '{"turn":1,"results":[]}', completedAt: at, summary: { turn: 1, calls: 2, statuses: { ok: 1, uncertain: 1 } } }, now())
    // An answer stored without a summary is summarized from the answer itself.
    const answer = { turn: 2, results: [{ callId: 'c1', status: 'ok' }, { callId: 'c2', status: 'blocked' }, { callId: 'c3', status: 'ok' }] }
    await completed(store, 'r1', { batchId: 'b2', requestHash: 'h2', responseJson: JSON.stringify(answer), completedAt: at + 1 }, now())
    await store.updateRun('r1', (run) => { run.inFlight = { batchId: 'b3', owner: 'replica-a', leaseExpiresAt: now() + 60_000 } })
    const entries = (await peer.listBatches('r1')).sort((a, b) => a.turn - b.turn)
    t.same(entries, [
      { batchId: 'b1', completedAt: at, turn: 1, calls: 2, statuses: { ok: 1, uncertain: 1 } },
      { batchId: 'b2', completedAt: at + 1, turn: 2, calls: 3, statuses: { ok: 2, blocked: 1 } }
    ])
    t.same((await peer.getBatch('r1', 'b1'))?.summary, { turn: 1, calls: 2, statuses: { ok: 1, uncertain: 1 } }, 'the summary is stored with the answer')
    t.same(await store.listBatches('ghost'), [])
    await store.endRun('r1', now())
    t.same(await peer.listBatches('r1'), [], 'ending the run frees its batches')
  })
}
