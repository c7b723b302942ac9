/**
 * The guard seam: one interface for the run-level rules (SPEC sections 3,
 * 6, 13, 14, 15). Each rule is a `Guard`, registered once in
 * `src/guards/index.ts`; for each batch it opens a `BatchGuard`, whose hooks
 * the batch's phases call in fixed places, in registration order, without
 * naming the rule:
 *
 * | hook | when | where it runs |
 * | --- | --- | --- |
 * | `Guard.startTurn` | a new batch starts (a turn), before its lease is taken | inside the run's atomic update: a reason ends the run instead |
 * | `screen` | the calls are prepared, before the run is read | pure: `hold` verdicts |
 * | `hold` | a call was screened `hold` | the hold phase: stores the batch's state with the calls it holds, for the 202 |
 * | `admit`, `count` | admission | inside the run's atomic update (re-run when a store retries it) |
 * | `begin`, `report` | settle: before and as each call is settled or listed to run | in this process |
 * | `beforeEpoch` | execute: before an epoch's first dispatch | in this process |
 * | `acquire`, `release` | execute: before each call is sent (go, with dispatch options, or an answer instead), and once it has its outcome | in this process |
 * | `afterEpoch` | after each epoch, and before the answer | may stop the run |
 * | `beforeClose`, `close`, `closed` | answer: before, inside and after the batch's final atomic update | |
 * | `Guard.reset` | `POST .../messages` | inside the run's atomic update |
 *
 * Each guard owns its slice of the run record (the call budget, the loop
 * streaks, the unresolved uncertain writes, the waiting batch) and of the
 * admission start (`RunRecord.admitted`), or of the store beside it (the
 * write-ahead records, the tenant's conflict keys).
 */
import type { Clock } from '../clock.js'
import type { PreparationOutcome, PreparedCall, RawCall } from '../model/call.js'
import type { BatchEvent, CallDetails, CallResult, PolicyMessage } from '../model/result.js'
import type { StopReason } from '../model/results.js'
import type { RunRecord, RunStats } from '../model/run.js'
import type { Approvals, Decision, StoredState, WaitingBatch } from '../model/waiting.js'
import type { StopSignal } from '../schedule/types.js'
import type { ObserverList } from '../telemetry/types.js'

/**
 * A guard's word on one call at admission (or, `hold`, before it): `go`
 * (as far as this guard is concerned), `hold` (the batch waits for someone),
 * `settle` (answered now with `result`, never dispatched), `as` (dispatched
 * under another operation id: the operation was sent before, and an action
 * settles its receipt). `by` names the guard. The first guard in
 * registration order that says more than `go` decides.
 */
export type Verdict =
  | { readonly kind: 'go' }
  | { readonly kind: 'hold', readonly by: string }
  | { readonly kind: 'settle', readonly result: CallResult, readonly by: string }
  | { readonly kind: 'as', readonly operationId: string, readonly by: string }

export const GO: Verdict = { kind: 'go' }

/** What every guard knows of a batch once its calls are prepared. */
export interface GuardedBatch {
  runId: string
  tenant: string
  batchId: string
  /** The id the run's lease is held under while the batch runs: its own, or a lease it shares (MCP calls that arrive together). */
  leaseId: string
  turn: number
  requestHash: string
  scopes: ReadonlySet<string>
  format?: string | undefined
  calls: readonly RawCall[]
  outcomes: readonly PreparationOutcome[]
  fingerprints: readonly string[]
  /** A batch taken up after it waited for approvals: the decision on each held call, by call index. */
  decisions?: ReadonlyArray<Decision | undefined> | undefined
  /** A call that arrived alone and waited its turn behind a write that became uncertain: that write's call id (its writes are blocked). */
  blockedBy?: string | undefined
}

/** Where a batch's admission started, kept in the run (`RunRecord.admitted`): each guard keeps its slice there. */
export type AdmissionStart = NonNullable<RunRecord['admitted']>

/** A run-level termination decided at admission: every call from `index` on is terminated with `reason`. */
export interface Stop { index: number, reason: StopReason, by: string }

/** Admission as the guards see it, inside the run's atomic update. */
export interface AdmissionScope {
  readonly run: RunRecord
  readonly start: AdmissionStart
  readonly batch: GuardedBatch
  /** Calls before it go on to their verdicts; the rest are terminated (`stop`). */
  readonly cut: number
  readonly stop: Stop | null
  /** Terminates the run at call `index`, unless an earlier call terminated it already. */
  terminate: (index: number, reason: StopReason, by: string) => void
  /** A verdict on call `index`; one that an earlier guard gave stays. */
  verdict: (index: number, v: Verdict) => void
}

/** What admission decided, as the batch keeps it. Plain data. */
export interface Admitted {
  /** By call index; `GO` where no guard spoke. */
  verdicts: Verdict[]
  cut: number
  stop: Stop | null
  /** Set when the run was not active: nothing may start, every call is cancelled. */
  notActive: string | null
}

/** The batch as guards see it while it runs in this process. */
export interface GuardRuntime {
  readonly observer: ObserverList
  /** The batch's contribution to the run's figures. */
  readonly stats: RunStats
  readonly policyMessages: PolicyMessage[]
  /** The host-visible events so far. */
  readonly events: readonly BatchEvent[]
  readonly onEvent: ((event: BatchEvent) => void) | undefined
  /** The batch was stopped (cancel, timeout, client gone, a loop). */
  stopped (): boolean
  /** When the batch started here (performance.now()). */
  readonly startedAt: number
}

/** What a guard reads of a batch as it closes. */
export interface ClosingBatch {
  readonly results: readonly CallResult[]
  /** By call index: the calls dispatched, and the operation id each went under. */
  readonly dispatched: ReadonlyArray<PreparedCall | undefined>
  readonly operations: ReadonlyArray<string | undefined>
}

/** A batch a guard held: its waiting batch as stored, its run as the update that held it left it (for the 202), and how many calls wait. */
export interface Held {
  waiting: WaitingBatch
  run: Pick<RunRecord, 'state' | 'terminationReason' | 'uncertain'>
  held: number
}

/** The batch's state as a store keeps it, with the approvals of the guard that holds it. */
export type StoreState = (approvals: Approvals) => StoredState

/** A call about to be sent, as `acquire` sees it. */
export interface Sending {
  readonly index: number
  readonly call: PreparedCall
  /** The operation id it goes under. */
  readonly operationId: string
  /** The batch's stop switch: a guard that waits gives up when it trips. */
  readonly signal: StopSignal
}

/** What a guard adds to the call it lets be sent (the executor reads them off the call): the fencing token of its tenant-scoped key. */
export interface DispatchOptions {
  fencingToken?: string
}

/** `acquire`'s go: the call may be sent, with the guard's dispatch options. */
export interface Go { readonly kind: 'go', readonly options?: DispatchOptions | undefined }

/**
 * A call a guard did not let be sent, answered instead: nothing was sent.
 * `stop` stops the batch too (it lost its lease: nothing more starts).
 */
export interface Refusal {
  readonly kind: 'refused'
  readonly status: 'blocked' | 'cancelled' | 'error'
  readonly content: string
  readonly details: CallDetails
  readonly stop?: string
}

/** A guard's word on a call about to be sent; `undefined` is a go without options. */
export type Passage = Go | Refusal | undefined

/** What `release` is told of a call its guard let through: whether it was sent, and whether its outcome is unknown (and why). */
export interface SendOutcome {
  /** False when a later guard refused it: nothing was sent. */
  readonly sent: boolean
  readonly uncertain: boolean
  readonly cause?: string | undefined
}

/** One rule's part in one batch. Every hook is optional; see the table at the top of this file. */
export interface BatchGuard {
  screen?: (verdicts: Verdict[]) => void
  hold?: (rt: GuardRuntime, stored: StoreState) => Promise<Held | null>
  admit?: (scope: AdmissionScope) => void
  count?: (scope: AdmissionScope) => void
  begin?: (rt: GuardRuntime, admitted: Admitted) => void
  report?: (index: number, verdict: Verdict, admitted: Admitted) => void
  /** Before the first dispatch of an epoch (one store round trip for the epoch's writes, say). */
  beforeEpoch?: (epoch: number, indexes: readonly number[]) => Promise<void> | void
  /**
   * After its epoch's `beforeEpoch`, in registration order: whether the call
   * may be sent (and with what), or its answer instead. The first refusal
   * decides; the guards before it that let it through are released
   * (`sent: false`).
   */
  acquire?: (sending: Sending) => Promise<Passage> | Passage
  /** Once a call this guard let through has its outcome (before it settles), or a later guard refused it. */
  release?: (index: number, outcome: SendOutcome) => Promise<void> | void
  afterEpoch?: (results: readonly CallResult[]) => StopReason | null
  beforeClose?: (closing: ClosingBatch, rt: GuardRuntime) => Promise<void> | void
  close?: (run: RunRecord) => void
  closed?: () => void
}

/** Why the run's streaks start over: a user message (`POST .../messages`), or the run's end. */
export type ResetCause = 'message' | 'end'

/** What a guard's `startTurn` is told of the batch that starts: the time, and the tokens its request reports. */
export interface TurnStart {
  readonly now: number
  readonly tokens: number
}

/** A run-level rule, registered once (src/guards/index.ts). */
export interface Guard {
  readonly name: string
  open: (batch: GuardedBatch) => BatchGuard
  /**
   * Inside the atomic update that starts a new batch, before the run counts
   * its turn: a reason the run is terminated for instead (the batch is then
   * answered `run_not_active`), or null. Runs before the batch's calls are
   * prepared, so it reads the run and the request, not the calls.
   */
  startTurn?: (run: RunRecord, turn: TurnStart) => StopReason | null
  /** Inside the run's atomic update: the rule's slice of the run starts over. */
  reset?: (run: RunRecord, cause: ResetCause) => void
  /** What a call not run reads, by each reason this rule may terminate the run for (`terminate`, `afterEpoch`). */
  readonly stops?: Readonly<Record<string, string>>
}

/** What guards are built with. */
export interface GuardDeps {
  clock: Clock
}
