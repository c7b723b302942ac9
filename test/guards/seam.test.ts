/**
 * The guard seam (src/guards/types.ts): a rule added after the registered
 * ones is called by the batch's phases in their fixed places, and what it
 * decides holds: a verdict settles a call at admission, a step before each
 * epoch and around each dispatch runs, a stop after an epoch terminates the
 * run and every later call, and its slice of the run is written in the
 * batch's final update. No rule is named by the phases: this one is not
 * known to them at all.
 */
import t from 'tap'
import type { BatchGuard, Guard } from '../../src/guards/types.js'
import { cancelledResult } from '../../src/model/results.js'
import type { RunRecord } from '../../src/model/run.js'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'

/** A probe: what its hooks saw, in order; it settles calls whose id starts `veto`, and stops the run once call `stopAfter` has answered. */
function probe (seen: string[], stopAfter: number | null): Guard {
  return {
    name: 'probe',
    open: (batch) => {
      let stopped = false
      const g: BatchGuard = {
        admit: (scope) => {
          seen.push('admit')
          batch.outcomes.forEach((o, i) => {
            if (o.id.startsWith('veto')) scope.verdict(i, { kind: 'settle', result: cancelledResult(o, 'vetoed'), by: 'probe' })
          })
        },
        count: () => { seen.push('count') },
        begin: () => { seen.push('begin') },
        beforeEpoch: async (epoch, indexes) => { seen.push(`epoch ${epoch} [${indexes.join(',')}]`) },
        acquire: (i) => { seen.push(`acquire ${i}`) },
        release: (i) => { seen.push(`release ${i}`) },
        afterEpoch: (results) => {
          if (stopped || stopAfter === null || results[stopAfter]?.status !== 'ok') return null
          stopped = true
          return 'no_progress'
        },
        close: (run: RunRecord) => { seen.push(`close ${run.state}`) },
        closed: () => { seen.push('closed') }
      }
      return g
    }
  }
}

t.test('a rule added as a guard settles a call by its verdict, and its hooks run in their places', async (t) => {
  const ex = await startExecutor(t)
  const seen: string[] = []
  const { app } = await buildTestApp(t, { tools: [tool('poke', ex.url)], moreGuards: [probe(seen, null)] })
  await post(app, '/v1/runs', { runId: 'seam', toolExecution: 'sequential' })
  const res = await post(app, '/v1/runs/seam/batches', {
    calls: [
      { id: 'a', name: 'poke', arguments: { n: 1 } },
      { id: 'veto-b', name: 'poke', arguments: { n: 2 } },
      { id: 'c', name: 'poke', arguments: { n: 3 } }
    ]
  })
  t.equal(res.status, 200)
  t.same(res.body.results.map((r: { callId: string, status: string }) => [r.callId, r.status]), [['a', 'ok'], ['veto-b', 'cancelled'], ['c', 'ok']])
  t.equal(res.body.results[1].details.reason, 'vetoed')
  t.equal(ex.calls.length, 2, 'the vetoed call was never dispatched')
  t.same(seen, ['admit', 'count', 'begin', 'epoch 0 [0]', 'acquire 0', 'release 0', 'epoch 1 [2]', 'acquire 2', 'release 2', 'close active', 'closed'])
})

t.test('a guard that stops the run after an epoch terminates it, and no later call starts', async (t) => {
  const ex = await startExecutor(t)
  const seen: string[] = []
  const { app } = await buildTestApp(t, { tools: [tool('poke', ex.url)], moreGuards: [probe(seen, 0)] })
  await post(app, '/v1/runs', { runId: 'stop', toolExecution: 'sequential' })
  const res = await post(app, '/v1/runs/stop/batches', {
    calls: [{ id: 'a', name: 'poke', arguments: { n: 1 } }, { id: 'b', name: 'poke', arguments: { n: 2 } }]
  })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'terminated'])
  t.equal(res.body.run.state, 'terminated')
  t.equal(res.body.run.terminationReason, 'no_progress')
  t.equal(ex.calls.length, 1)
  t.ok(seen.includes('close terminated'), 'the final update sees the run terminated')
  const run = await get(app, '/v1/runs/stop')
  t.equal(run.body.state, 'terminated')
})
