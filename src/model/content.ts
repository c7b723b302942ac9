/**
 * What the model reads when a call did not produce an executor's answer:
 * short JSON, a stable `error` code and one plain sentence. Never a stack
 * trace, never the arguments.
 */
import type { CallErrorCode } from '../errors.js'

export function errorContent (error: CallErrorCode, message: string, extra?: Record<string, unknown>): string {
  return JSON.stringify({ error, message, ...extra })
}

export const UNCERTAIN_MESSAGE =
  'The outcome of this call is unknown: the request may have reached the tool, but no definitive answer came back. ' +
  'It may or may not have taken effect. Repeating the call may apply it twice; check the current state before trying again.'

/** Why a write waits: an earlier write of the batch has an unknown outcome and could conflict with it. */
export function blockedMessage (blockedBy: string): string {
  return `Not run: an earlier write (${blockedBy}) has an unknown outcome, and this write could conflict with it. Check the state before retrying.`
}

export const CANCELLED_MESSAGE = 'Not run: the batch was cancelled before this call started.'
export const CLOSED_MESSAGE = 'Not run: the batch was closed before this call started.'

/** An executor's `content`: a string passes through, any other JSON value is serialized. */
export function contentOf (value: unknown): string {
  if (value === undefined) return ''
  if (typeof value === 'string') return value
  return JSON.stringify(value) ?? ''
}

/** Why a call did not run: its tenant-scoped resource stayed in use by another agent (SPEC section 17). */
export const CONFLICT_BUSY_MESSAGE = 'Not run: another agent is changing the same resource right now, and it stayed busy for as long as this call could wait. ' +
  'Nothing was sent. Check the current state of the resource before trying again.'

/** Why a write waits: a write to the same tenant-scoped resource, from any run, has an unknown outcome (SPEC section 17). */
export function keyUncertainMessage (blockedBy: string): string {
  return `Not run: an earlier write to the same resource (${blockedBy}, possibly by another agent) has an unknown outcome; it may already have taken effect. ` +
    'No write to that resource is sent until that outcome is known. Check the current state of the resource.'
}

/** Why a write waits: the same write, sent in an earlier batch, has an unknown outcome (SPEC section 14). */
export function unresolvedWriteMessage (blockedBy: string): string {
  return `Not run: this same call was sent before (${blockedBy}) and its outcome is still unknown; it may already have taken effect. ` +
    'It will not be repeated until that outcome is known. Check the current state instead of sending it again.'
}
