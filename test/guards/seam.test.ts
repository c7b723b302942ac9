/**
 * The guard seam (src/guards/types.ts): a rule added after the registered
 * ones is called by the batch's phases in their fixed places, and what it
 * decides holds: a verdict settles a call at admission, a step before each
 * epoch and around each dispatch runs, a stop after an epoch terminates the
 * run and every later call, and its slice of the run is written in the
 * batch's final update; before a call is sent, a guard's `acquire` lets it
 * go with dispatch options (the executor sees them) or answers it instead,
 * and `release` hears how it came out; as a new batch starts, a guard's
 * `startTurn` may end the run instead. No rule is named by the phases: this
 * one is not known to them at all.
 */
import t from 'tap'
import type { BatchGuard, Guard, SendOutcome } from '../../src/guards/types.js'
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
        acquire: (s) => { seen.push(`acquire ${s.index}`) },
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

/** A gate: refuses calls whose id starts `shut`, lets the others go with a fencing token of its own; what release heard, by call id. */
function gate (released: Record<string, SendOutcome>): Guard {
  return {
    name: 'gate',
    open: () => ({
      acquire: async ({ call, operationId }) => {
        if (operationId === '') throw new Error('every call goes under an operation id')
        if (call.id.startsWith('shut')) return { kind: 'refused', status: 'blocked', content: 'shut', details: { reason: 'gate_shut' } }
        return { kind: 'go', options: { fencingToken: `gate-${call.id}` } }
      },
      release: (i, outcome) => { released[String(i)] = outcome }
    })
  }
}

t.test("a guard's acquire lets a call go with its dispatch options or answers it instead; release hears the outcome", async (t) => {
  const ex = await startExecutor(t)
  const released: Record<string, SendOutcome> = {}
  const { app } = await buildTestApp(t, { tools: [tool('poke', ex.url)], moreGuards: [gate(released)] })
  const tokens: unknown[] = []
  ex.on('poke', (_call, req) => {
    tokens.push(req.headers['toolgate-fencing-token'])
    return { content: 'ok' }
  })
  await post(app, '/v1/runs', { runId: 'gate' })
  const res = await post(app, '/v1/runs/gate/batches', {
    calls: [{ id: 'a', name: 'poke', arguments: { n: 1 } }, { id: 'shut-b', name: 'poke', arguments: { n: 2 } }]
  })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'blocked'])
  t.equal(res.body.results[1].details.reason, 'gate_shut')
  t.equal(ex.calls.length, 1, 'the refused call was never sent')
  t.same(tokens, ['gate-a'], "the guard's option reached the executor")
  t.same(released, { 0: { sent: true, uncertain: false } }, 'only the call it let go is released, with its outcome')
})

/** Call guards in order: the first answers a promise, the second at once; both hear how each call they let go came out. */
function pair (log: string[]): Guard[] {
  return [
    {
      name: 'slow',
      open: () => ({
        acquire: async (s) => { log.push(`slow acquire ${s.index}`) },
        release: async (i, o) => { log.push(`slow release ${i} sent=${String(o.sent)}`) }
      })
    },
    {
      name: 'quick',
      open: () => ({
        acquire: (s) => {
          log.push(`quick acquire ${s.index}`)
          return s.call.id.startsWith('shut')
            ? { kind: 'refused', status: 'blocked', content: 'shut', details: { reason: 'quick_shut' } }
            : undefined
        },
        release: (i, o) => { log.push(`quick release ${i} sent=${String(o.sent)}`) }
      })
    }
  ]
}

t.test('call guards are asked in registration order, whether they answer at once or with a promise; a refusal releases those that let the call go, unsent', async (t) => {
  const ex = await startExecutor(t)
  const log: string[] = []
  const { app } = await buildTestApp(t, { tools: [tool('poke', ex.url)], moreGuards: pair(log) })
  await post(app, '/v1/runs', { runId: 'pair', toolExecution: 'sequential' })
  const res = await post(app, '/v1/runs/pair/batches', {
    calls: [{ id: 'a', name: 'poke', arguments: { n: 1 } }, { id: 'shut-b', name: 'poke', arguments: { n: 2 } }]
  })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'blocked'])
  t.equal(ex.calls.length, 1, 'the refused call was never sent')
  t.same(log, [
    'slow acquire 0', 'quick acquire 0', 'slow release 0 sent=true', 'quick release 0 sent=true',
    'slow acquire 1', 'quick acquire 1', 'slow release 1 sent=false'
  ])
})

t.test("a guard's startTurn ends the run before a new batch starts: the batch is answered run_not_active with its reason, and nothing is sent", async (t) => {
  const ex = await startExecutor(t)
  const told: Array<{ turns: number, tokens: number }> = []
  const turnsOut: Guard = {
    name: 'turns_out',
    open: () => ({}),
    // Lets the first batch start and ends the run at the second.
    startTurn: (run, turn) => {
      told.push({ turns: run.counters.turns, tokens: turn.tokens })
      return run.counters.turns >= 1 ? 'max_turns' : null
    }
  }
  const { app } = await buildTestApp(t, { tools: [tool('poke', ex.url)], moreGuards: [turnsOut] })
  await post(app, '/v1/runs', { runId: 'turns' })
  const first = await post(app, '/v1/runs/turns/batches', { calls: [{ id: 'a', name: 'poke', arguments: { n: 1 } }], usage: { inputTokens: 5, outputTokens: 2 } })
  t.equal(first.status, 200)
  const second = await post(app, '/v1/runs/turns/batches', { calls: [{ id: 'b', name: 'poke', arguments: { n: 2 } }] })
  t.equal(second.status, 409)
  t.equal(second.body.code, 'run_not_active')
  t.equal(second.body.terminationReason, 'max_turns')
  t.equal(ex.calls.length, 1, 'the second batch sent nothing')
  t.same(told, [{ turns: 0, tokens: 7 }, { turns: 1, tokens: 0 }], 'told the run before it counts the turn, and the request\'s tokens')
  const run = await get(app, '/v1/runs/turns')
  t.equal(run.body.state, 'terminated')
  t.equal(run.body.terminationReason, 'max_turns')
})
