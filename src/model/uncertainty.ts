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
  /** Its conflict key is tenant-scoped (SPEC section 17): it blocks later writes with the key from every run of the tenant. */
  tenantKey?: true
  /** Epoch ms at which it was recorded (its batch finished). */
  since: number
  /**
   * Why its outcome is unknown, when known: its exchange's cause (`timeout`,
   * `http_5xx`…), or `replica_lost`, the replica sending it died (SPEC section 17).
   */
  cause?: UncertainCause | (string & {})
}

/** Why an uncertainty's outcome is unknown beside its call's own answer. */
export type UncertainCause = 'replica_lost'
