/**
 * A started batch between its phases (prepare, hold, admit, execute,
 * answer): what each phase reads and leaves for the next. The engine creates
 * it when a batch starts (`newBatchState`); the coordinator
 * (`coordinator.ts`) loads it from the run's waiting batch when one is taken
 * up after approvals, and runs the phase it names next. It is data, no
 * behaviour; what exists only while the batch runs in this process (its stop
 * switch, observers, detectors) is its `BatchRuntime`. The hold phase stores
 * it as the run's `WaitingBatch` (`src/model/waiting.ts`): plain JSON,
 * tools named rather than held, scopes as a list.
 */
import type { RestoredApprovals } from '../approvals/waiting.js'
import type { LoopState } from '../model/loops.js'
import type { LoopTerminationReason } from '../repeat/loops.js'
import { emptyStats } from '../runs/stats.js'
import type { RunOptions, RunRecord, RunStats, TerminationReason } from '../model/run.js'
import type { PreparationOutcome, PreparedCall, RawCall } from '../model/call.js'
import type { CanonicalText } from '../model/json.js'
import type { HeldBack } from '../uncertain/types.js'
import type { Admission } from './admit.js'
import type { IdentifiedCalls } from './identify-calls.js'
import type { CallResult, PolicyMessage } from '../model/result.js'

/**
 * The phases of a batch, in the order they run: `admit` decides inside the
 * run's atomic update, `settle` then settles (here) every call admission
 * does not let through.
 */
export type BatchPhase = 'prepare' | 'hold' | 'admit' | 'settle' | 'execute' | 'answer'

/** A started batch: its request, the run as its start read it, and what each phase has done so far. */
export interface BatchState {
  /** The phase that runs next. */
  phase: BatchPhase
  runId: string
  tenant: string
  batchId: string
  turn: number
  /** The run's options and creation time, as the step that started the batch read them. */
  options: RunOptions
  createdAt: number
  /** The calls as they came (a batch loaded after approvals: their ids and names), and their hash and canonical argument texts. */
  calls: RawCall[]
  identified: IdentifiedCalls
  /** The scopes of the key that sent the batch. */
  scopes: ReadonlySet<string>
  /** The provider format the calls came in, when they came in one (src/formats). */
  format?: string
  /** The provider cut its response short: every call is rejected. */
  incomplete?: boolean
  /** A batch taken up after it waited for approvals: its calls as prepared then, and the decisions on them. */
  approvals?: RestoredApprovals
  /** Set by the prepare phase, or before the lease by the engine's fast path (the batch then starts at `hold` or `settle`). */
  prepared?: Prepared
  /** Set by the admit phase, or in the lease's own step by the engine's fast path; undefined after it when the run was gone. */
  admitted?: Admitted
  /** By call index: every call's result, `PENDING` until it settles. */
  results: CallResult[]
  policyMessages: PolicyMessage[]
  /** The batch's contribution to the run's figures. */
  stats: RunStats
  /** The calls admission let through, in source order, and by call index. */
  dispatchable: PreparedCall[]
  dispatched: PreparedCall[]
  /** By call index: the operation id each dispatched call went under. */
  operations: string[]
  /** A receipt projection failed: nothing more of the batch starts, and the run ends. */
  closed: boolean
  /** The loop detector that terminated the run during the batch, if one did. */
  loopStop: LoopTerminationReason | null
}

/** A batch's calls as prepared, with the canonical text and fingerprint of each call's prepared arguments. */
export interface Prepared {
  outcomes: readonly PreparationOutcome[]
  argumentTexts: CanonicalText[]
  fingerprints: string[]
  /** When preparation started, as ISO text (receipts' timelines). */
  preparedAt: string
  preparationMs: number
}

/** What admission decided, and what the batch keeps of it: where the loop detectors start and which calls the run's uncertainties hold back. */
export interface Admitted {
  /** A reason when the run is no longer active and nothing may start. */
  verdict: Admission | TerminationReason | 'run_not_active'
  loopStart: LoopState | null
  /** By call index: retries of the run's unresolved uncertain writes (SPEC section 14), and calls they block. */
  held: Array<HeldBack | undefined>
}

/** Holds a result's place until its call settles; every call settles before the answer is built. */
export const PENDING = {} as CallResult

/** What a batch's state starts from: its identity and request. */
export interface StateInput {
  runId: string
  tenant: string
  batchId: string
  calls: RawCall[]
  scopes: ReadonlySet<string>
  format?: string | undefined
  incomplete?: boolean | undefined
  approvals?: RestoredApprovals | undefined
}

/** A batch's state before its first phase, on `run` as the step that started it left the run. */
export function newBatchState (input: StateInput, run: RunRecord, turn: number, identified: IdentifiedCalls): BatchState {
  const state: BatchState = {
    phase: 'prepare',
    runId: input.runId,
    tenant: input.tenant,
    batchId: input.batchId,
    turn,
    options: run.options,
    createdAt: run.createdAt,
    calls: input.calls,
    identified,
    scopes: input.scopes,
    results: [],
    policyMessages: [],
    stats: emptyStats(),
    dispatchable: [],
    dispatched: [],
    operations: [],
    closed: false,
    loopStop: null
  }
  if (input.format !== undefined) state.format = input.format
  if (input.incomplete !== undefined) state.incomplete = input.incomplete
  if (input.approvals !== undefined) state.approvals = input.approvals
  return state
}

/**
 * The entry of a per-call list (by call index) that the batch's own steps
 * filled: a missing one is a bug of the engine, thrown as one rather than
 * read as undefined.
 */
export function callAt<T> (list: ReadonlyArray<T | undefined>, index: number, what: string): T {
  const value = list[index]
  if (value === undefined) throw new Error(`call ${index} of the batch has no ${what}`)
  return value
}
