import type { RawCall, RejectedCall } from '../model/call.js'

const MESSAGE = 'the model response was cut short or filtered before it was complete, so this call was not run; its arguments may be incomplete'

/**
 * Every call of a response its provider marked as cut short or filtered,
 * rejected before preparation: a half-written call must reach no stage that
 * acts on it (the external authorizer included), let alone an executor.
 * Arguments stay as sent, so a model looping on the same cut-off call is
 * still caught by repeat tracking.
 */
export function rejectIncomplete (calls: readonly RawCall[]): RejectedCall[] {
  return calls.map((call, index) => ({ ok: false, index, id: call.id, requestedName: call.name, tool: null, reason: 'incomplete_response', message: MESSAGE, arguments: call.arguments }))
}
