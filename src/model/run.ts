import type { WaitingBatch } from './waiting.js'
import type { LoopTerminationReason, LoopState } from './loops.js'
import type { Uncertainty } from './uncertainty.js'

export type RunState = 'active' | 'terminated' | 'cancelled' | 'ended'

/** Why a run stopped being active for a reason of its own, not a registered loop kind's. */
export type RuleTerminationReason =
  | 'exact_repeat'
  | 'max_turns'
  | 'max_tool_calls'
  | 'max_total_tokens'
  | 'timeout'
  | 'projection_failed'
  | 'cancelled'
  | 'ended'

/** Why a run stopped being active: a rule's reason or a loop kind's (src/repeat/kinds/). */
export type TerminationReason = RuleTerminationReason | LoopTerminationReason

/**
 * The run-wide limits (SPEC sections 3 and 15); null means no limit, a
 * threshold of 0 disables it. Beside these, each loop kind's two limits by
 * their names (src/repeat/kinds/).
 */
export interface RunLimits {
  readonly exactToolRepeatAdvisoryThreshold: number
  readonly exactToolRepeatTerminationThreshold: number
  readonly maxTurns: number | null
  readonly maxToolCalls: number | null
  readonly timeoutMs: number | null
  readonly maxTotalTokens: number | null
  readonly [loopLimit: string]: number | null
}

export type EventsAudience = 'stock' | 'lifecycle'

/** A run's effective options, every default filled in. */
export interface RunOptions {
  readonly toolExecution: ToolExecutionMode
  readonly maxConcurrentTools: number
  readonly limits: RunLimits
  /** Allow-list of tool names, or null for every tool. */
  readonly tools: readonly string[] | null
  readonly events: EventsAudience
  readonly metadata: Readonly<Record<string, string>>
}

/** The exact-repeat streak kept across batches (SPEC section 6). */
export interface RepeatState {
  fingerprint: string | null
  count: number
  advised: boolean
}

/** Per-run figures for the performance summary (SPEC section 8). */
export interface RunStats {
  epochs: number
  largestEpoch: number
  callsByStatus: Record<string, number>
  /** Sum of every call's own duration. */
  toolTimeMs: number
  /** Sum of batch wall times. */
  wallTimeMs: number
  repeatAdvisories: number
  repeatTerminations: number
  projectionFailures: number
  uncertainWrites: number
  blockedCalls: number
  /** Decisions on held calls (SPEC section 13); absent in figures from before approvals existed. */
  approvals?: { approved: number, denied: number, expired: number }
  /** Detections of the loop kinds beyond exact repeats (those are repeatAdvisories and repeatTerminations); absent in figures stored before them. */
  loops?: LoopCounts
}

/** Advisories and terminations of each loop kind beyond `exact`, by its name (a kind with none may be absent). */
export type LoopCounts = Record<string, { advisories: number, terminations: number }>

/** The batch holding a run's lease. */
export interface InFlight {
  batchId: string
  /** Which process holds the lease (a replica id). */
  owner: string
  leaseExpiresAt: number
}

/**
 * The record the store keeps of one run, rewritten by every update; its
 * batch ids are kept beside it (`Store.updateRunWithBatchId`), so the record
 * stays the same size however many batches the run has had. Times are epoch
 * milliseconds.
 */
export interface RunRecord {
  runId: string
  tenant: string
  state: RunState
  terminationReason: TerminationReason | null
  options: RunOptions
  counters: { turns: number, toolCalls: number, totalTokens: number }
  repeat: RepeatState
  /** The loop detectors' state beside the exact-repeat streak (SPEC section 15); absent in records stored before them. */
  loops?: LoopState
  /**
   * Where the last admitted batch's admission started from. Admitting that
   * batch again (resumed after its replica died or was paused past its lease)
   * starts from here, so its calls count once toward maxToolCalls and
   * advance the repeat streak once. Each guard (src/guards/) keeps its own
   * slice here: the call budget `toolCalls`, the loop detectors `repeat` and `loops`.
   */
  admitted: { batchId: string, repeat?: RepeatState, toolCalls?: number, loops?: LoopState } | null
  inFlight: InFlight | null
  /** The batch waiting for approvals, until its answer is stored (src/approvals). */
  waiting?: WaitingBatch | null
  stats: RunStats | null
  /** Unresolved uncertain writes (SPEC section 14); absent until the run has one. */
  uncertain?: Uncertainty[]
  createdAt: number
  lastActiveAt: number
}

/** The run's default scheduling mode (SPEC section 3, `toolExecution`). */
export type ToolExecutionMode = 'sequential' | 'safeParallel' | 'parallel'
