/**
 * What retry safety shares between replicas beside the run records (SPEC
 * section 14): which run an uncertain write belongs to (unresolved, or
 * resolved since), found by its operation id alone, and the short locks
 * under which one replica at a time asks an executor how such a write ended. The uncertainties themselves
 * live in the run record (`RunRecord.uncertain`), written by run updates;
 * this index lives as long as the runs it points to.
 */
export interface UncertainWrites {
  /**
   * Notes which run unresolved uncertain writes belong to, so an operation id
   * alone finds its run (and the gauge counts them). Kept about as long as
   * the run is; noting them again pushes that on. Nothing when the run is gone.
   */
  indexUncertain (runId: string, operationIds: readonly string[]): Promise<void>
  /**
   * An operation noted by indexUncertain is no longer unresolved (resolved,
   * or dropped from its run): countUncertain no longer counts it, but
   * runOfUncertain still finds its run while the run is held, so resolving
   * it again is told from resolving an unknown operation.
   */
  unindexUncertain (operationId: string): Promise<void>
  /** The run an operation noted by indexUncertain belongs to, resolved since or not, while that run is held. */
  runOfUncertain (operationId: string): Promise<string | undefined>
  /** Unresolved uncertain writes of the runs held. */
  countUncertain (): Promise<number>
  /**
   * Takes a short lock named `name` for `owner`, unless another owner holds
   * it; it lapses after `ttlMs` if never released. Answers whether it was taken.
   */
  tryLock (name: string, owner: string, ttlMs: number): Promise<boolean>
  /** Releases a lock, only if `owner` holds it. */
  unlock (name: string, owner: string): Promise<void>
}
