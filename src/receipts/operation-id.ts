import type { RunIdentity } from '../model/incarnation.js'
import { sha256 } from '../model/sha256.js'

/**
 * The operation id of a call: derived from the run, the call id and the
 * call's fingerprint, so a resent call maps to the same operation while a
 * reused call id with other arguments does not. The run is its id, tenant
 * and creation time: receipts outlive their run, and a later run that
 * reuses the id (another tenant's, or the same tenant's) must never be
 * answered with an earlier run's receipt.
 */
export function operationId (run: RunIdentity, callId: string, fingerprint: string): string {
  return 'op_' + sha256(`${run.tenant}\u0000${run.runId}\u0000${run.createdAt}\u0000${callId}\u0000${fingerprint}`, 'hex').slice(0, 40)
}
