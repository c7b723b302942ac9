import { sha256 } from '../repeat/sha256.js'

/**
 * The operation id of a call: derived from the run, the call id and the
 * call's fingerprint, so a resent call maps to the same operation while a
 * reused call id with other arguments does not.
 */
export function operationId (runId: string, callId: string, fingerprint: string): string {
  return 'op_' + sha256(`${runId}\u0000${callId}\u0000${fingerprint}`, 'hex').slice(0, 40)
}
