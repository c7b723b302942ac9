import type { Uncertainty } from '../model/uncertainty.js'


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
