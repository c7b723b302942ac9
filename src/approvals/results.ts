import type { CallResult } from '../model/result.js'
import type { RunStats } from '../model/run.js'
import type { Decision } from '../model/waiting.js'

/** How a decision shows in its call's `details.approval`: who (tenant and name, never a key), when, what. */
function approvalDetails (d: Decision): Record<string, unknown> {
  const out: Record<string, unknown> = { decision: d.expired === true ? 'expired' : d.approve ? 'approved' : 'denied', at: new Date(d.at).toISOString() }
  if (d.by !== null) out.by = d.by
  if (d.reason !== undefined) out.reason = d.reason
  if (d.edited === true) out.edited = true
  if (d.arguments !== undefined) out.arguments = d.arguments
  return out
}

/**
 * Records each held call's decision in its result's details, and counts the
 * decisions in the batch's figures (for the summaries).
 */
export function recordDecisions (results: readonly CallResult[], decisions: ReadonlyArray<Decision | undefined>, stats: RunStats): void {
  const counts = stats.approvals ?? (stats.approvals = { approved: 0, denied: 0, expired: 0 })
  decisions.forEach((d, i) => {
    // A call its caller withdrew was decided by no one: it is cancelled, with no approval to show or count.
    if (d === undefined || d.withdrawn === true) return
    const result = results[i]
    if (result !== undefined) (result.details as Record<string, unknown>).approval = approvalDetails(d)
    if (d.expired === true) counts.expired++
    else if (d.approve) counts.approved++
    else counts.denied++
  })
}
