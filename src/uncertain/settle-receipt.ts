import type { Receipt } from '../receipts/types.js'
import type { Outcome, ResolvedHow } from './types.js'

/** The timeline event and disposition each way of resolving leaves on an action's receipt. */
const MARKS: Record<Exclude<ResolvedHow, 'idempotent_retry'>, { event: string, disposition: Receipt['dispatch']['disposition'] }> = {
  status_url: { event: 'recovered', disposition: 'recovered' },
  manual: { event: 'resolved', disposition: 'resolved' }
}

/**
 * An uncertain receipt settled by its status URL or by hand; undefined when
 * the receipt is not uncertain any more (another resolution came first), so
 * a settled receipt is never rewritten.
 */
export function settleUncertainReceipt (receipt: Receipt, outcome: Outcome, how: Exclude<ResolvedHow, 'idempotent_retry'>, at: string): Receipt | undefined {
  if (receipt.status !== 'uncertain') return undefined
  const mark = MARKS[how]
  return {
    ...receipt,
    status: outcome.status,
    result: outcome.result ?? {},
    stateRevision: outcome.stateRevision ?? receipt.stateRevision,
    timeline: [...receipt.timeline, { event: mark.event, at }],
    dispatch: { disposition: mark.disposition, attempts: receipt.dispatch.attempts }
  }
}
