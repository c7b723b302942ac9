/**
 * A held batch's state as its run keeps it while it waits for approvals
 * (`RunRecord.waiting`), and back: the one conversion between a
 * `BatchState` and its stored form (`StoredState`, src/model/waiting.ts).
 * The stored form is the state's own data, made plain JSON: tools named
 * (a batch taken up on another replica looks them up there), scopes a list.
 * What the run holds (its options, creation time) and what the phases after
 * admission fill in is not stored: only a batch held before its admission
 * is, and it runs on from the admit phase.
 */
import type { PreparationOutcome, PreparedCall, RejectedCall } from '../model/call.js'
import { canonicalText } from '../model/json.js'
import type { RunRecord } from '../model/run.js'
import type { ToolLookup } from '../model/tool.js'
import { type Approvals, type StoredCall, type StoredState, type WaitingBatch, storedOutcome } from '../model/waiting.js'
import type { EngineDeps } from './engine-types.js'
import { preparedAgain } from './phases/prepare.js'
import { type BatchState, callAt, newBatchState } from './state.js'

/** The state of a prepared batch as a store keeps it, with its approvals (held or decided since). */
export function storedState (state: BatchState, approvals: Approvals): StoredState {
  const prepared = state.prepared
  if (prepared === undefined) throw new Error(`batch ${state.batchId} is stored before it is prepared`)
  const stored: StoredState = {
    batchId: state.batchId,
    turn: state.turn,
    calls: state.calls.map(storedCall),
    scopes: [...state.scopes],
    outcomes: prepared.outcomes.map(storedOutcome),
    approvals
  }
  if (state.format !== undefined) stored.format = state.format
  return stored
}

/** A call's id and name, and what a provider format marked on it. */
function storedCall (raw: StoredCall): StoredCall {
  const call: StoredCall = { id: raw.id, name: raw.name }
  if (raw.kind !== undefined) call.kind = raw.kind
  if (raw.generatedId === true) call.generatedId = true
  return call
}

/**
 * The state of the batch `run` holds waiting, loaded to run on from the
 * admit phase (or to answer while it waits): its calls as prepared then,
 * tools looked up here, with the decisions on them.
 */
export function loadState (deps: Pick<EngineDeps, 'tools' | 'clock' | 'authorizer'>, run: Pick<RunRecord, 'runId' | 'tenant' | 'options' | 'createdAt'>, w: WaitingBatch): BatchState {
  const stored = w.state
  const outcomes = loadOutcomes(stored, deps.tools)
  const identified = { requestHash: w.requestHash, argumentTexts: outcomes.map((o) => canonicalText(o.arguments ?? null)) }
  const state = newBatchState({
    runId: run.runId, tenant: run.tenant, batchId: stored.batchId, calls: stored.calls, scopes: new Set(stored.scopes), format: stored.format, approvals: stored.approvals
  }, run, stored.turn, identified)
  state.prepared = preparedAgain(deps, stored.calls, outcomes)
  state.phase = 'admit'
  return state
}

/**
 * A stored batch's calls as preparation outcomes again, tools looked up by
 * name on this replica (a tool removed meanwhile makes its call
 * `unknown_tool`). Denied calls stay prepared: they count for repeats like
 * any prepared call; the engine answers them `denied` instead of running them.
 */
function loadOutcomes (stored: StoredState, tools: ToolLookup): PreparationOutcome[] {
  return stored.outcomes.map((o, index) => {
    const { id, name: requestedName } = callAt(stored.calls, index, 'stored call')
    const tool = o.tool === null ? null : (tools.resolve(o.tool) ?? null)
    if (!o.ok) {
      const rejected: RejectedCall = { ok: false, index, id, requestedName, tool, reason: o.reason, message: o.message, arguments: o.arguments }
      return rejected
    }
    if (tool === null) {
      return { ok: false, index, id, requestedName, tool: null, reason: 'unknown_tool', message: `the tool ${o.tool} was removed while the batch waited`, arguments: o.arguments }
    }
    const prepared: PreparedCall = { ok: true, index, id, requestedName, tool, arguments: o.arguments, conflictKey: o.conflictKey }
    return prepared
  })
}
