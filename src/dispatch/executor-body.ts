import { jsonString } from '../json-text.js'
import type { ExecutorCall } from './executor.js'

/**
 * The start of every executor request body of one batch: written once per
 * batch, not once per call (the HTTP executor keeps its last).
*/
export function executorBodyPrefix (runId: string, batchId: string): string {
  return `{"runId":${jsonString(runId)},"batchId":${jsonString(batchId)},"callId":`
}

/**
 * The executor protocol's request body (SPEC section 7): exactly what
 * JSON.stringify writes for `{ runId, batchId, callId, tool, arguments,
 * operationId, deadline }`, written after the batch's prefix (a test holds
 * the two together). The operation id (`op_` and hex) and the deadline (ISO
 * time) are toolgate's own and need no escaping; a third of the cost of
 * stringifying the whole object per call was its constant part.
 * `argumentsJson` is JSON.stringify(call.arguments), when the caller has it.
 */
export function executorBody (prefix: string, call: ExecutorCall, operationId: string, deadline: string,
  argumentsJson = JSON.stringify(call.arguments)): string {
  return `${prefix}${jsonString(call.id)},"tool":${jsonString(call.tool.name)},"arguments":${argumentsJson},"operationId":"${operationId}","deadline":"${deadline}"}`
}
