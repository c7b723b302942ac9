import { Listeners } from './listeners.js'
import type { CancelListener, CancelReason } from './records.js'

/** Carries a run's cancellation to whichever replica runs its batch. */
export interface CancelBus {
  /**
   * Asks every replica sharing this bus to cancel the run's batch in flight.
   * This process's listeners hear it before the promise settles; other
   * replicas hear it at most once, soon after (a replica cut off from the
   * bus at that moment misses it, so the run's state must say it too).
   */
  publishCancel (runId: string, reason: CancelReason): Promise<void>
  /** Subscribes to every replica's cancellations; answers the unsubscribe function. */
  onCancel (listener: CancelListener): () => void
}

/** This process's cancel listeners. */
export class CancelListeners extends Listeners<Parameters<CancelListener>> {}
