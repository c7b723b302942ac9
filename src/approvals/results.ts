import { errorContent } from '../batch/content.js'
import type { CallResult } from '../batch/types.js'
import type { PreparationOutcome } from '../prepare/types.js'
import type { RunStats } from '../runs/types.js'
import type { Decision } from './types.js'

const EXPIRED_MESSAGE = 'Not run: this call needed a person\'s approval and no one decided in time. Do not assume it happened.'

/** A held call a person declined, or no one decided in time: never dispatched. */
export function deniedResult (call: PreparationOutcome, decision: Decision): CallResult {
  const expired = decision.expired === true
  const message = expired ? EXPIRED_MESSAGE : 'Not run: a person declined this call.'
  const content = expired
    ? errorContent('denied', message, { reason: 'approval_expired' })
    : errorContent('denied', message, decision.reason === undefined ? {} : { reason: decision.reason })
  const details: CallResult['details'] = { reason: expired ? 'approval_expired' : 'denied' }
  if (call.tool !== null && call.tool.name !== call.requestedName) details.tool = call.tool.name
  return { callId: call.id, name: call.requestedName, status: 'denied', content, isError: true, details }
}

/** How a decision shows in its call's `details.approval`: who (tenant and name, never a key), when, what. */
function approvalDetails (d: Decision): Record<string, unknown> {
  const out: Record<string, unknown> = { decision: d.expired === true ? 'expired' : d.approve ? 'approved' : 'denied', at: new Date(d.at).toISOString() }
  if (d.by !== null) out.by = d.by
  if (d.reason !== undefined) out.reason = d.reason
  if (d.edited === true) out.edited = true
  return out
}

/**
 * Records each held call's decision in its result's details, and counts the
 * decisions in the batch's figures (for the summaries).
 */
export function recordDecisions (results: readonly CallResult[], decisions: ReadonlyArray<Decision | undefined>, stats: RunStats): void {
  const counts = stats.approvals ?? (stats.approvals = { approved: 0, denied: 0, expired: 0 })
  decisions.forEach((d, i) => {
    if (d === undefined) return
    const result = results[i]
    if (result !== undefined) (result.details as Record<string, unknown>).approval = approvalDetails(d)
    if (d.expired === true) counts.expired++
    else if (d.approve) counts.approved++
    else counts.denied++
  })
}
