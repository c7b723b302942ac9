/**
 * Which run a record, a write or an operation belongs to, among all runs
 * that may ever carry its id (SPEC section 19). A run id stored again
 * (after expiry or eviction) is another incarnation: what a batch of an
 * earlier one writes late (a receipt, an answer, a write-ahead record)
 * never reaches it, and an operation id names the incarnation it was sent
 * in. One idea, used by the receipts (operation ids), the store (its
 * writes, its write-ahead records) and the batch (its final update).
 */

/** A run's incarnation: the tenant that created it, and when. */
export interface Incarnation {
  readonly tenant: string
  /** Epoch ms: a run id reused once its run expired is another run. */
  readonly createdAt: number
}

/** What makes one run: its id, and its incarnation. */
export interface RunIdentity extends Incarnation {
  readonly runId: string
}

/** A run's identity, copied out of anything that carries one (a run record, a batch's state). */
export function identityOf (run: RunIdentity): RunIdentity {
  return { runId: run.runId, tenant: run.tenant, createdAt: run.createdAt }
}

/** Whether two runs of one id are the same incarnation: the same tenant and creation time. */
export function isIncarnation (a: Incarnation, b: Incarnation): boolean {
  return a.createdAt === b.createdAt && a.tenant === b.tenant
}

/** The incarnation as one string (the Redis store keeps it beside the record, so a script compares it without decoding the record). */
export function incarnationKey (incarnation: Incarnation): string {
  return `${incarnation.createdAt} ${incarnation.tenant}`
}
