/**
 * A held batch is stored as its state: `storedState` makes it plain JSON,
 * `loadState` makes it a batch's state again, on this replica or another.
 */
import t from 'tap'
import { holdApprovals } from '../../src/approvals/waiting.js'
import type { EngineDeps } from '../../src/batch/engine-types.js'
import { identifyCalls } from '../../src/batch/identify-calls.js'
import { prepareCalls } from '../../src/batch/phases/prepare.js'
import { type BatchState, newBatchState } from '../../src/batch/state.js'
import { loadState, storedState } from '../../src/batch/stored-state.js'
import type { RawCall, RejectedCall } from '../../src/model/call.js'
import type { BatchEvent } from '../../src/model/result.js'
import type { StoredState, WaitingBatch } from '../../src/model/waiting.js'
import { ToolRegistry } from '../../src/tools/registry.js'
import { FakeClock } from '../clock.js'
import { tool } from '../helper.js'
import { makeRun } from '../store/harness.js'

const EXECUTOR = 'http://127.0.0.1:9'

function registry (names: readonly string[]): ToolRegistry {
  const tools = new ToolRegistry({ allowedOrigins: null })
  tools.putAll([
    tool('look', EXECUTOR, { readOnly: true }),
    tool('mail', EXECUTOR, { requiresApproval: true, conflictKey: 'to:{/k}', aliases: ['send'] }),
    tool('pay', EXECUTOR, { requiresApproval: true, action: {} })
  ].filter((d) => names.includes(d.name)))
  return tools
}

function depsWith (tools: ToolRegistry): EngineDeps {
  return { tools, clock: new FakeClock(), maxArgumentBytes: 1 << 20 } as unknown as EngineDeps
}

const run = makeRun('r1', 1_800_000_000_000)
const started: BatchEvent = { seq: 1, at: new Date(run.createdAt).toISOString(), type: 'batch.started', size: 4 } as BatchEvent

/** A batch as the engine leaves it before the hold phase: prepared, with a held call, a call that needs no decision and a rejection. */
async function preparedBatch (deps: EngineDeps): Promise<BatchState> {
  const calls: RawCall[] = [
    { id: 'c1', name: 'look', arguments: { x: 1 } },
    { id: 'c2', name: 'send', arguments: '{"k":"bob","x":"7"}' },
    { id: 'c3', name: 'nope', arguments: {} },
    { id: 'c4', name: 'pay', arguments: { y: 2 }, generatedId: true }
  ]
  const identified = await identifyCalls(calls)
  const state = newBatchState({ runId: run.runId, tenant: run.tenant, batchId: 'b1', calls, scopes: new Set(['tools:*']), format: 'openai-chat' }, run, 3, identified)
  state.prepared = await prepareCalls(deps, state, identified, null)
  return state
}

function waitingOf (state: BatchState, stored: StoredState): WaitingBatch {
  return { phase: 'awaiting', requestHash: state.identified.requestHash, requestedAt: run.createdAt, expiresAt: run.createdAt + 60_000, state: stored }
}

t.test("a held batch's stored state is plain JSON: tools by name, scopes a list, the approvals as held", async (t) => {
  const deps = depsWith(registry(['look', 'mail', 'pay']))
  const state = await preparedBatch(deps)
  const approvals = holdApprovals(state.prepared!.outcomes, [started])
  const stored = storedState(state, approvals)
  t.strictSame(JSON.parse(JSON.stringify(stored)), stored, 'nothing in it but JSON')
  t.strictSame(stored, {
    batchId: 'b1',
    turn: 3,
    calls: [{ id: 'c1', name: 'look' }, { id: 'c2', name: 'send' }, { id: 'c3', name: 'nope' }, { id: 'c4', name: 'pay', generatedId: true }],
    scopes: ['tools:*'],
    outcomes: [
      { ok: true, tool: 'look', arguments: { x: 1 }, conflictKey: null },
      { ok: true, tool: 'mail', arguments: { k: 'bob', x: 7 }, conflictKey: 'to:bob' },
      { ok: false, tool: null, reason: 'unknown_tool', message: (state.prepared!.outcomes[2] as RejectedCall).message, arguments: {} },
      { ok: true, tool: 'pay', arguments: { y: 2 }, conflictKey: null }
    ],
    approvals: { held: [null, {}, null, {}], events: [started] },
    format: 'openai-chat'
  })
  const arguments_ = state.prepared!.outcomes[0]!.arguments as Record<string, unknown>
  arguments_.x = 99
  t.same(stored.outcomes[0]!.arguments, { x: 1 }, 'arguments are copied, not shared with the request')
})

t.test('a stored state loads back into the same state, from the admit phase, and stores the same again', async (t) => {
  const deps = depsWith(registry(['look', 'mail', 'pay']))
  const state = await preparedBatch(deps)
  const approvals = holdApprovals(state.prepared!.outcomes, [started])
  approvals.held[1]!.decision = { approve: true, by: { tenant: 'acme' }, at: run.createdAt + 5 }
  approvals.held[3]!.retryOf = 'op-7'
  const stored = storedState(state, approvals)
  const loaded = loadState(deps, run, waitingOf(state, JSON.parse(JSON.stringify(stored)) as StoredState))
  t.equal(loaded.phase, 'admit')
  for (const key of ['runId', 'tenant', 'batchId', 'turn', 'format', 'options', 'createdAt'] as const) t.same(loaded[key], state[key], key)
  t.same(loaded.scopes, state.scopes)
  t.same(loaded.identified, { requestHash: state.identified.requestHash, argumentTexts: state.prepared!.argumentTexts })
  t.same(loaded.calls, stored.calls, 'the calls, their arguments in their outcomes')
  t.same(loaded.prepared!.outcomes, state.prepared!.outcomes, 'the outcomes, tools looked up again')
  t.equal(loaded.prepared!.outcomes[1]!.tool, deps.tools.resolve('mail'), 'the tool itself, by its name (not the alias the model used)')
  t.same(loaded.prepared!.fingerprints, state.prepared!.fingerprints)
  t.same(loaded.approvals, approvals, 'the decisions and marks on the held calls, and the events')
  t.strictSame(storedState(loaded, loaded.approvals!), stored, 'stored again, the same JSON')
})

t.test('a tool removed while the batch waited loads as an unknown_tool rejection', async (t) => {
  const state = await preparedBatch(depsWith(registry(['look', 'mail', 'pay'])))
  const stored = storedState(state, holdApprovals(state.prepared!.outcomes, []))
  const loaded = loadState(depsWith(registry(['look', 'pay'])), run, waitingOf(state, stored))
  const mail = loaded.prepared!.outcomes[1]!
  t.equal(mail.ok, false)
  t.match(mail, { reason: 'unknown_tool', message: 'the tool mail was removed while the batch waited', arguments: { k: 'bob', x: 7 } })
  t.equal(loaded.prepared!.outcomes[3]!.ok, true)
})
