/**
 * Examples for the OpenAPI document: the README's first run, written out in
 * full. The Redocly lint checks each against its schema.
 */

export const RUN_EXAMPLE = {
  runId: 'demo-1',
  state: 'active',
  toolExecution: 'safeParallel',
  maxConcurrentTools: 8,
  limits: { exactToolRepeatAdvisoryThreshold: 3, exactToolRepeatTerminationThreshold: 8, maxTurns: null, maxToolCalls: null, timeoutMs: null, maxTotalTokens: null },
  tools: null,
  events: 'stock',
  metadata: {},
  counters: { turns: 0, toolCalls: 0, totalTokens: 0 },
  createdAt: '2026-11-30T09:42:40.339Z',
  lastActiveAt: '2026-11-30T09:42:40.339Z',
  expiresAt: '2026-11-30T10:42:40.339Z'
}

export const BATCH_REQUEST_EXAMPLE = {
  batchId: 'turn-1',
  calls: [
    { id: 'call_1', name: 'look', arguments: '{"x": 1, "y": 2}' },
    { id: 'call_2', name: 'look', arguments: { x: 3, y: 4 } },
    { id: 'call_3', name: 'construct', arguments: { type: 'wall', x: '1', y: 300 } },
    { id: 'call_4', name: 'fly', arguments: {} }
  ]
}

const RECEIPT = {
  operationId: 'op_43860f0c2be8d8e4a1b5e3d2c7f9a6b1e0d4c3b2',
  runId: 'demo-1',
  batchId: 'turn-1',
  callId: 'call_3',
  tool: 'build',
  intent: { action: 'build', arguments: { kind: 'wall', x: 1, y: 255 } },
  status: 'committed',
  result: { label: 'Wall #1', reward: 5 },
  stateRevision: 1,
  timeline: [
    { event: 'prepared', at: '2026-11-30T09:42:41.102Z' },
    { event: 'dispatched', at: '2026-11-30T09:42:41.106Z' },
    { event: 'responded', at: '2026-11-30T09:42:41.108Z' }
  ],
  dispatch: { disposition: 'dispatched', attempts: 1 },
  timing: { dispatchedAt: '2026-11-30T09:42:41.106Z', completedAt: '2026-11-30T09:42:41.108Z', durationMs: 2.1 }
}

export const RECEIPT_EXAMPLE = RECEIPT

export const BATCH_RESPONSE_EXAMPLE = {
  runId: 'demo-1',
  batchId: 'turn-1',
  turn: 1,
  results: [
    {
      callId: 'call_1', name: 'look', status: 'ok',
      content: '{"x":1,"y":2,"terrain":"sand","color":null,"structure":null}', isError: false,
      details: { epoch: 0, durationMs: 3.1, startedAt: '2026-11-30T09:42:41.100Z', httpStatus: 200, operationId: 'op_ae3f5b1c9d0e2f4a6b8c0d1e3f5a7b9c1d3e5f7a' }
    },
    {
      callId: 'call_2', name: 'look', status: 'ok',
      content: '{"x":3,"y":4,"terrain":"sand","color":null,"structure":null}', isError: false,
      details: { epoch: 0, durationMs: 2.9, startedAt: '2026-11-30T09:42:41.100Z', httpStatus: 200, operationId: 'op_0b2d4f6a8c1e3a5c7e9b1d3f5a7c9e1b3d5f7a9c' }
    },
    {
      callId: 'call_3', name: 'construct', status: 'ok',
      content: '{"action":"build","status":"committed","label":"Wall #1","reward":5}', isError: false,
      details: { epoch: 1, durationMs: 2.1, startedAt: '2026-11-30T09:42:41.106Z', tool: 'build', operationId: RECEIPT.operationId, receipt: RECEIPT }
    },
    {
      callId: 'call_4', name: 'fly', status: 'rejected',
      content: '{"error":"unknown_tool","message":"there is no tool named \\"fly\\""}', isError: true,
      details: { reason: 'unknown_tool', message: 'there is no tool named "fly"' }
    }
  ],
  events: [
    { seq: 1, type: 'batch.started', at: '2026-11-30T09:42:41.099Z', size: 4 },
    { seq: 2, type: 'batch.completed', at: '2026-11-30T09:42:41.109Z', durationMs: 9.8 }
  ],
  policyMessages: [],
  continue: true,
  run: { state: 'active' }
}

export const TOOL_EXAMPLE = {
  name: 'build',
  description: 'Build a structure on the tile at (x, y).',
  inputSchema: {
    type: 'object',
    properties: { kind: { type: 'string', enum: ['wall', 'tower'] }, x: { type: 'integer' }, y: { type: 'integer' } },
    required: ['kind', 'x', 'y']
  },
  executor: { url: 'http://127.0.0.1:9000/tools/build', timeoutMs: 30000 },
  readOnly: false,
  execution: 'auto',
  conflictKey: 'tile:{/x}:{/y}',
  aliases: ['construct'],
  argumentAliases: { type: 'kind' },
  rewrite: [{ op: 'clamp', path: '/y', min: 0, max: 255 }],
  requiredScopes: ['world:write'],
  action: { projection: "{ 'action': intent.action, 'status': $lowercase(receipt.status), 'label': receipt.result.label, 'reward': receipt.result.reward }" }
}

export const SUMMARY_EXAMPLE = {
  runId: 'demo-1', state: 'active', turns: 1, calls: 4, callsByStatus: { ok: 3, rejected: 1 },
  epochs: 2, largestEpoch: 2, toolTimeMs: 12.7, wallTimeMs: 9.8, timeSavedMs: 2.9,
  repeatAdvisories: 0, repeatTerminations: 0, projectionFailures: 0, uncertainWrites: 0, blockedCalls: 0
}
