/**
 * A call with a tenant-scoped conflict key (SPEC section 17), around its
 * dispatch: the key taken before the call is sent (its fencing token goes to
 * the executor), released once the call has its answer; a call that cannot
 * have the key is settled here without being sent.
 */
import type { KeyedCall, TenantKeyGate } from '../conflicts/gate.js'
import { CONFLICT_BUSY_MESSAGE, errorContent, keyUncertainMessage } from '../model/content.js'
import type { PreparedCall } from '../model/call.js'
import type { DispatchOutcome, StopSignal } from '../schedule/types.js'
import type { ActionOutcome } from './dispatch-action.js'

/** Whether a prepared call takes its conflict key in the store: a tenant-scoped key, resolved. */
export function tenantKeyed (call: PreparedCall): call is PreparedCall & { conflictKey: string } {
  return call.conflictKey !== null && call.tool.conflictScope === 'tenant'
}

/** Takes the call's key, sends it with the key's fencing token (`send`), releases the key after its answer. */
export async function dispatchKeyed (gate: TenantKeyGate, keyed: KeyedCall, signal: StopSignal,
  send: (fencingToken: string) => Promise<DispatchOutcome<ActionOutcome>>): Promise<DispatchOutcome<ActionOutcome>> {
  const entry = await gate.enter(keyed, signal)
  switch (entry.kind) {
    case 'held': {
      let outcome: DispatchOutcome<ActionOutcome> | undefined
      try {
        outcome = await send(entry.token)
        return outcome
      } finally {
        // A send that threw is settled uncertain by the runner (a write may have left): listed as such before the key is freed.
        const uncertain = outcome === undefined || outcome.uncertain
        await entry.leave({ uncertain, cause: outcome?.value.details.cause ?? (outcome === undefined ? 'internal_error' : undefined) })
      }
    }
    case 'busy':
      return notSent('blocked', errorContent('conflict_key_busy', CONFLICT_BUSY_MESSAGE), { reason: 'conflict_key_busy' })
    case 'uncertain': {
      const by = entry.by
      return notSent('blocked', errorContent('unresolved_uncertain_write', keyUncertainMessage(by.callId), { blockedBy: by.callId }),
        { reason: 'unresolved_uncertain_write', blockedBy: by.callId, blockedByOperation: by.operationId, blockedByRun: by.runId })
    }
    case 'stopped':
      return notSent('cancelled', errorContent('cancelled', 'Not run: the batch was cancelled while this call waited for its resource.'), { reason: String(signal.reason) })
    case 'unavailable':
      return notSent('error', errorContent('store_unavailable', "Not run: toolgate's store could not be reached to take the resource's key; nothing was sent."), { reason: 'store_unavailable' })
  }
}

function notSent (status: 'blocked' | 'cancelled' | 'error', content: string, details: ActionOutcome['details']): DispatchOutcome<ActionOutcome> {
  return { value: { status, content, isError: true, details }, uncertain: false, closeBatch: false }
}
