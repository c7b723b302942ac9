import type { ExecutionHint } from '../tools/types.js'

/** The run's default scheduling mode (SPEC section 3, `toolExecution`). */
export type ToolExecutionMode = 'sequential' | 'safeParallel' | 'parallel'

/** What the planner and the runner need to know of a prepared call. */
export interface SchedulableCall {
  /** Position in the batch (source order); unique. */
  readonly index: number
  readonly id: string
  readonly readOnly: boolean
  readonly execution: ExecutionHint
  readonly conflictKey: string | null
}

/** The calls of one epoch, in source order. */
export type Epoch = readonly SchedulableCall[]

/** What a dispatch tells the runner once its call has settled. */
export interface DispatchOutcome<T> {
  readonly value: T
  /** The call was a write whose outcome is unknown: later writes get blocked. */
  readonly uncertain: boolean
  /** Close the batch: nothing not yet started may start (projection_failed). */
  readonly closeBatch: boolean
}

/** How one call of a batch ended, as the runner saw it. */
export type Settlement<T> =
  | { readonly kind: 'ran', readonly epoch: number, readonly value: T, readonly startedAt: number, readonly durationMs: number }
  | { readonly kind: 'blocked', readonly epoch: number, readonly blockedBy: string }
  | { readonly kind: 'cancelled', readonly epoch: number }

/** Lifecycle hooks, called synchronously in the real order things happen. */
export interface RunnerHooks {
  epochStarted? (epoch: number, size: number): void
  callStarted? (call: SchedulableCall, epoch: number): void
  callSettled? (call: SchedulableCall, epoch: number, settlement: Settlement<unknown>): void
  epochSettled? (epoch: number, durationMs: number): void
}
