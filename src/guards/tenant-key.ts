/**
 * Tenant-scoped conflict keys (SPEC section 17) as one guard. A call whose
 * tool's conflict keys are tenant-scoped takes its key in the store before
 * it is sent (`acquire`, waiting in arrival order up to the tool's
 * conflictWaitMs): it goes with the key's fencing token (the executor sends
 * it on), or is answered without being sent (the key is busy, or an
 * unresolved uncertain write holds it, or the batch stopped while it waited,
 * or the store could not be reached). Once the call has its outcome the key
 * is released (`release`); a write whose outcome is unknown is listed on
 * the key first (src/conflicts/gate.ts). Its slice: the tenant's keys in
 * the store. A batch with no such call, or a service with no gate, opens
 * a guard with no hooks: it costs nothing.
 */
import type { KeyedCall, TenantKeyGate } from '../conflicts/gate.js'
import { CONFLICT_BUSY_MESSAGE, errorContent, keyUncertainMessage } from '../model/content.js'
import type { PreparedCall } from '../model/call.js'
import type { CallDetails } from '../model/result.js'
import type { BatchGuard, Guard, GuardedBatch, Passage, Refusal, SendOutcome, Sending } from './types.js'

const NAME = 'tenant_key'

/** What the guard is built with: the gate of the tenant's keys; without one, such keys keep calls apart inside a batch only. */
export interface TenantKeyDeps {
  keys?: TenantKeyGate | undefined
}

/** Whether a prepared call takes its conflict key in the store: a tenant-scoped key, resolved. */
export function tenantKeyed (call: PreparedCall): call is PreparedCall & { conflictKey: string } {
  return call.conflictKey !== null && call.tool.conflictScope === 'tenant'
}

type Leave = (outcome: { uncertain: boolean, cause?: string | undefined }) => Promise<void>

class TenantKeyGuard implements BatchGuard {
  readonly #batch: GuardedBatch
  readonly #gate: TenantKeyGate
  /** By call index: how to leave the key a call holds while it runs. */
  readonly #held = new Map<number, Leave>()

  constructor (batch: GuardedBatch, gate: TenantKeyGate) {
    this.#batch = batch
    this.#gate = gate
  }

  /** A tenant-keyed call waits for its key here; any other call goes at once. */
  acquire (sending: Sending): Passage | Promise<Passage> {
    return tenantKeyed(sending.call) ? this.#enter(sending, sending.call) : undefined
  }

  async #enter (sending: Sending, call: PreparedCall & { conflictKey: string }): Promise<Passage> {
    const { tenant, runId } = this.#batch
    const keyed: KeyedCall = { tenant, runId, callId: call.id, operationId: sending.operationId, tool: call.tool.name, conflictKey: call.conflictKey, write: !call.tool.readOnly, waitMs: call.tool.conflictWaitMs }
    const entry = await this.#gate.enter(keyed, sending.signal)
    switch (entry.kind) {
      case 'held':
        this.#held.set(sending.index, entry.leave)
        return { kind: 'go', options: { fencingToken: entry.token } }
      case 'busy':
        return notSent('blocked', errorContent('conflict_key_busy', CONFLICT_BUSY_MESSAGE), { reason: 'conflict_key_busy' })
      case 'uncertain': {
        const by = entry.by
        return notSent('blocked', errorContent('unresolved_uncertain_write', keyUncertainMessage(by.callId), { blockedBy: by.callId }),
          { reason: 'unresolved_uncertain_write', blockedBy: by.callId, blockedByOperation: by.operationId, blockedByRun: by.runId })
      }
      case 'stopped':
        return notSent('cancelled', errorContent('cancelled', 'Not run: the batch was cancelled while this call waited for its resource.'), { reason: String(sending.signal.reason) })
      case 'unavailable':
        return notSent('error', errorContent('store_unavailable', "Not run: toolgate's store could not be reached to take the resource's key; nothing was sent."), { reason: 'store_unavailable' })
    }
  }

  /** The key is freed once the call has its outcome: a write that may have left is listed as uncertain first. */
  release (index: number, outcome: SendOutcome): Promise<void> | undefined {
    const leave = this.#held.get(index)
    if (leave === undefined) return undefined
    this.#held.delete(index)
    return leave({ uncertain: outcome.uncertain, cause: outcome.cause })
  }
}

function notSent (status: Refusal['status'], content: string, details: CallDetails): Refusal {
  return { kind: 'refused', status, content, details }
}

/** A batch with no tenant-keyed call has nothing to take. */
const NOTHING: BatchGuard = {}

/** The guard, with the gate of the tenant's keys when there is one. */
export function tenantKeyGuard (deps: TenantKeyDeps): Guard {
  const gate = deps.keys
  return {
    name: NAME,
    open: (batch) => gate !== undefined && batch.outcomes.some((o) => o.ok && tenantKeyed(o)) ? new TenantKeyGuard(batch, gate) : NOTHING
  }
}
