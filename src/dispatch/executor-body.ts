import type { PreparedCall } from '../prepare/types.js'

/** The executor protocol's request body (SPEC section 7). */
export function executorBody (runId: string, batchId: string, call: PreparedCall, operationId: string, deadline: string): string {
  return JSON.stringify({
    runId,
    batchId,
    callId: call.id,
    tool: call.tool.name,
    arguments: call.arguments,
    operationId,
    deadline
  })
}
