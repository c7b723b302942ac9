/**
 * A started batch between its phases (prepare, hold, admit, execute,
 * answer): what each phase reads and leaves for the next. The engine creates
 * it when a batch starts (`newBatchState`); the coordinator
 * (`coordinator.ts`) loads it from the run's waiting batch when one is taken
 * up after approvals, and runs the phase it names next. It is data, no
 * behaviour; what exists only while the batch runs in this process (its stop
 * switch, observers, detectors) is its `BatchRuntime`. The hold phase stores
 * it in the run's waiting batch as plain JSON, tools named rather than held,
 * scopes as a list (`storedState` and `loadState`, stored-state.ts).
 */
import type { Admitted, BatchGuard, GuardedBatch } from '../guards/types.js'
import { emptyStats } from '../runs/stats.js'
import type { RunOptions, RunRecord, RunStats } from '../model/run.js'
import type { PreparationOutcome, PreparedCall, RawCall } from '../model/call.js'
import type { CanonicalText } from '../model/json.js'
import type { StopReason } from '../model/results.js'
import type { IdentifiedCalls } from './identify-calls.js'
import type { CallResult, PolicyMessage } from '../model/result.js'
import type { Approvals } from '../model/waiting.js'

export type { Admitted } from '../guards/types.js'

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
  /** The id its run's lease is held under: its own, or a lease it shares with other batches of the run (MCP calls that arrive together). */
  leaseId?: string
  /** Scheduled by arrival behind a write that became uncertain: that write's call id (src/guards/arrivals.ts). */
  blockedBy?: string
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
  /** A batch held for approvals (set once it is held, or loaded when it is taken up): its held calls with the decisions on them, and its events while it waited. */
  approvals?: Approvals
  /** Set by the prepare phase, or before the lease by the engine's fast path (the batch then starts at `hold` or `settle`). */
  prepared?: Prepared
  /** Set by the admit phase (the guards' verdicts), or in the lease's own step by the engine's fast path; undefined after it when the run was gone. */
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
  operations: Array<string | undefined>
  /** A receipt projection failed: nothing more of the batch starts, and the run ends. */
  closed: boolean
  /** The guard's reason when one terminated the run while the batch ran (a loop detector after an epoch). */
  stoppedBy: StopReason | null
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

/**
 * A batch ready for its phases after prepare: its prepared calls, and the
 * run's rules' parts in it (src/guards), opened once its calls are
 * prepared. Not data: a batch taken up on another replica opens its guards
 * there again.
 */
export interface Ready {
  prepared: Prepared
  /** The batch as the guards see it. */
  batch: GuardedBatch
  /** In registration order; the phases call their hooks in fixed places. */
  guards: readonly BatchGuard[]
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
  approvals?: Approvals | undefined
  /** Scheduled by arrival behind a write that became uncertain: that write's call id. */
  blockedBy?: string | undefined
}

/** A batch's state before its first phase, on `run` as the step that started it left the run. */
export function newBatchState (input: StateInput, run: Pick<RunRecord, 'options' | 'createdAt'>, turn: number, identified: IdentifiedCalls): BatchState {
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
    stoppedBy: null
  }
  if (input.format !== undefined) state.format = input.format
  if (input.incomplete !== undefined) state.incomplete = input.incomplete
  if (input.approvals !== undefined) state.approvals = input.approvals
  if (input.blockedBy !== undefined) state.blockedBy = input.blockedBy
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
