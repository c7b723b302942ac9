import type { Receipt } from '../model/receipt.js'
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

/** An uncertainty as a resolution took it off its run. */
export interface Resolved {
  uncertainty: Uncertainty
  /** An action's receipt as settled (or as another resolution left it). */
  receipt?: Receipt
}
