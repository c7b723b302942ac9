/** A call's result and the batch's answer, as the host and the model see them (SPEC sections 4 and 8). */
import type { Receipt } from './receipt.js'

/** A call's status in the batch response (SPEC section 4). */
export type CallStatus = 'ok' | 'error' | 'rejected' | 'uncertain' | 'blocked' | 'cancelled' | 'terminated' | 'projection_failed' | 'denied'


/** One call's result, in source order. */
export interface CallResult {
  callId: string
  name: string
  status: CallStatus
  /** The string handed to the model. */
  content: string
  isError: boolean
  details: CallDetails
}

/** For the host, not the model. */
export interface CallDetails {
  epoch?: number
  durationMs?: number
  startedAt?: string
  reason?: string
  message?: string
  blockedBy?: string
  /** The call's conflict key as resolved from its prepared arguments (SPEC section 5); never logged. */
  conflictKey?: string
  /** Why the call started after its epoch did: a free slot, or the call holding its conflict key. */
  waited?: { readonly for: 'slot' } | { readonly for: 'conflict_key', readonly callId: string }
  /** The operation id of the unresolved uncertain write a call was blocked by (SPEC section 14). */
  blockedByOperation?: string
  /** The run of that write, when a tenant-scoped conflict key blocked the call (SPEC section 17). */
  blockedByRun?: string
  /** The canonical tool name when the model used an alias. */
  tool?: string
  httpStatus?: number
  cause?: string
  /** The code of an MCP server's JSON-RPC error answer. */
  jsonRpcCode?: number
  operationId?: string
  executor?: Record<string, unknown>
  receipt?: Receipt
  projectionProblem?: string
}

/** An event as the host sees it (SPEC section 8); never arguments. */
export interface BatchEvent {
  seq: number
  type: 'batch.started' | 'epoch.started' | 'call.started' | 'call.progress' | 'call.completed' | 'epoch.settled' | 'tool.repeat_detected' | 'run.terminated' | 'batch.completed'
    | 'batch.awaiting_approval' | 'call.awaiting_approval' | 'call.approved' | 'call.denied'
  at: string
  callId?: string
  tool?: string
  epoch?: number
  status?: string
  durationMs?: number
  action?: string
  /** tool.repeat_detected: which detector. */
  kind?: string
  count?: number
  /** call.progress: the executor's progress so far, and its total when it knows one (never its message). */
  progress?: number
  total?: number
  reason?: string
  size?: number
}

export interface PolicyMessage { type: 'agent_policy', content: string }

/** The answer to POST /v1/runs/{runId}/batches. */
export interface BatchResponse {
  runId: string
  batchId: string
  turn: number
  /** `completed`; a batch held for approvals answers `awaiting_approval` (src/approvals). */
  state: 'completed'
  results: CallResult[]
  events: BatchEvent[]
  policyMessages: PolicyMessage[]
  continue: boolean
  run: { state: string, terminationReason?: string }
  /** What to append to the conversation, in the provider format the batch came in (SPEC section 11). */
  messages?: unknown[]
}
