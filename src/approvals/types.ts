/** One call waiting for a decision, as the API shows it. */
export interface PendingApproval {
  callId: string
  tool: string
  arguments: Record<string, unknown>
  requestedAt: string
  expiresAt: string
  /**
   * The call retries a write whose outcome is still unknown (this operation
   * id): approved, it is `blocked`, not run, until that write is resolved.
   */
  blockedBy?: string
}

/** A decision as the approvals route takes it. */
export interface DecisionInput {
  callId: string
  approve: boolean
  reason?: string
  arguments?: unknown
}

/** What the engine's settings say of approvals. */
export interface ApprovalSettings {
  /** How long a held call waits for a decision. */
  ttlMs: number
  /** How long after the approvals expire the run stays pinned, should no replica take the batch up at once. */
  graceMs: number
}
