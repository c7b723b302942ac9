/**
 * An unresolved uncertainty (SPEC section 14): a write of the run whose
 * outcome is unknown and that nothing has resolved yet. Kept in the run's
 * record, so it is written in the same atomic step as the batch that made
 * it, lives in whichever store holds the run, and expires with the run.
 */
export interface Uncertainty {
  operationId: string
  /** The call's fingerprint (SPEC section 6): a later write with the same one is its retry. */
  fingerprint: string
  conflictKey: string | null
  callId: string
  batchId: string
  tool: string
  /** An action tool's: its receipt is `uncertain` too and is settled on resolution. */
  action: boolean
  /** Epoch ms at which it was recorded (its batch finished). */
  since: number
}

/** The definitive outcome that resolves an uncertainty. */
export type ResolvedStatus = 'committed' | 'rejected' | 'failed'

/** How an uncertainty was resolved: the label of `toolgate_uncertain_resolved_total`. */
export type ResolvedHow = 'status_url' | 'idempotent_retry' | 'manual'

export const RESOLVED_HOWS: readonly ResolvedHow[] = ['status_url', 'idempotent_retry', 'manual']

/** What a status URL, or a person, says of an operation. */
export interface Outcome {
  status: ResolvedStatus
  result?: Record<string, unknown>
  stateRevision?: string | number
}

/** How a write of a batch stands against the run's unresolved uncertainties, decided at admission. */
export type HeldBack =
  /** Not dispatched: the same write's outcome is unknown. */
  | { kind: 'blocked', by: Uncertainty }
  /** An idempotent tool's retry: dispatched under the original operation id, its answer resolves `of`. */
  | { kind: 'retry', of: Uncertainty }
