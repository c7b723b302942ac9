/**
 * A batch as an operator key reads it (the page's timelines for people who
 * run the service): timings, statuses, reasons, conflict keys and decisions,
 * without what the model was told or what the calls carried: no `content`,
 * no `messages`, no receipts (they hold arguments), no executor details, no
 * held or edited arguments.
 */
import type { Role } from '../auth/keys.js'

/** Whether a key with these roles reads runs as an operator only (it has no role that sees arguments). */
export function operatorOnly (roles: ReadonlySet<Role>): boolean {
  return roles.has('operator') && !roles.has('orchestrator') && !roles.has('approver')
}

/** A batch answer (JSON text) without anything of arguments or results' content. */
export function operatorBatchView (json: string): string {
  const answer = JSON.parse(json) as Record<string, unknown>
  delete answer.messages
  if (Array.isArray(answer.results)) {
    for (const r of answer.results as Array<Record<string, unknown>>) {
      delete r.content
      const d = r.details as Record<string, unknown> | undefined
      if (d === undefined) continue
      delete d.receipt
      delete d.executor
      const approval = d.approval as Record<string, unknown> | undefined
      if (approval !== undefined) delete approval.arguments
    }
  }
  if (Array.isArray(answer.approvals)) {
    for (const a of answer.approvals as Array<Record<string, unknown>>) delete a.arguments
  }
  return JSON.stringify(answer)
}
