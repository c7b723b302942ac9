/** Receipt status (SPEC section 7). */
export type ReceiptStatus = 'committed' | 'rejected' | 'failed' | 'uncertain'

/** The durable, canonical record of one action dispatch. */
export interface Receipt {
  operationId: string
  runId: string
  batchId: string
  callId: string
  tool: string
  intent: { action: string, arguments: Record<string, unknown> }
  status: ReceiptStatus
  result: Record<string, unknown> | null
  stateRevision: string | number | null
  timeline: Array<{ event: string, at: string }>
  /** `recovered`: settled from the executor's status URL; `resolved`: settled by hand (SPEC section 14). */
  dispatch: { disposition: 'dispatched' | 'replayed' | 'recovered' | 'resolved', attempts: number }
  timing: { dispatchedAt: string, completedAt: string, durationMs: number }
}
