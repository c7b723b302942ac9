import { terminate } from './transitions.js'
import type { RunRecord } from '../model/run.js'

/** Whether the run has a `timeoutMs` and it has passed at `now` (epoch ms): the limit counts from the run's creation. */
export function deadlinePassed (run: RunRecord, now: number): boolean {
  const { timeoutMs } = run.options.limits
  return timeoutMs !== null && now >= run.createdAt + timeoutMs
}

/**
 * Terminates an active run whose `timeoutMs` has passed, inside the caller's
 * atomic update, and answers whether it did. Whatever touches a run applies
 * it first, so a run does not read `active` past its deadline, and a
 * cancel or a message that comes after the deadline finds it `timeout`.
 */
export function applyDeadline (run: RunRecord, now: number): boolean {
  return deadlinePassed(run, now) && terminateByTimeout(run)
}

/**
 * Terminates an active run with `timeout`, and answers whether it did: for a
 * timer set for the deadline, which can fire a little before the wall clock
 * reads it (Node times from the event loop's cached clock), so it must not
 * ask the clock again.
 */
export function terminateByTimeout (run: RunRecord): boolean {
  return terminate(run, 'timeout')
}
