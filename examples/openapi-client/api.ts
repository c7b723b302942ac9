// Generated from openapi.yaml by examples/openapi-client/generate.ts: do not edit.
/* eslint-disable */

/** An RFC 9457 problem with a stable `code`. */
export type Problem = {
  /** A URI naming the problem type; one per code. */
  type: string
  /** A short summary that goes with the code. */
  title: string
  /** The HTTP status. */
  status: number
  /** Stable error code from the catalogue: switch on this. */
  code: "invalid_request" | "invalid_tool" | "duplicate_call_id" | "invalid_mcp_server" | "unauthorized" | "forbidden" | "run_not_found" | "tool_not_found" | "batch_not_found" | "mcp_server_not_found" | "not_found" | "method_not_allowed" | "operation_not_found" | "run_exists" | "run_busy" | "run_not_active" | "operation_not_uncertain" | "no_status_url" | "approval_not_pending" | "payload_too_large" | "unsupported_media_type" | "batch_id_reused" | "rate_limited" | "quota_exceeded" | "internal_error" | "overloaded"
  /** What went wrong in this case. */
  detail?: string
  /** The request path. */
  instance?: string
  /** With `run_not_active`: why the run stopped. */
  terminationReason?: "exact_repeat" | "repeat_cycle" | "consecutive_errors" | "no_progress" | "max_turns" | "max_tool_calls" | "max_total_tokens" | "timeout" | "projection_failed" | "cancelled" | "ended"
  /** With `invalid_tool`: every fault found in the definition. */
  problems?: Array<string>
  [key: string]: unknown
}

export type Run = {
  runId: string
  state: "active" | "terminated" | "cancelled" | "ended"
  terminationReason?: "exact_repeat" | "repeat_cycle" | "consecutive_errors" | "no_progress" | "max_turns" | "max_tool_calls" | "max_total_tokens" | "timeout" | "projection_failed" | "cancelled" | "ended"
  toolExecution: "sequential" | "safeParallel" | "parallel"
  maxConcurrentTools: number
  limits: {
    exactToolRepeatAdvisoryThreshold: number
    exactToolRepeatTerminationThreshold: number
    maxTurns: number | null
    maxToolCalls: number | null
    timeoutMs: number | null
    maxTotalTokens: number | null
    cycleAdvisoryRepetitions: number
    cycleTerminationRepetitions: number
    consecutiveErrorAdvisory: number
    consecutiveErrorTermination: number
    noProgressAdvisory: number
    noProgressTermination: number
    [key: string]: unknown
  }
  tools: (Array<string>) | null
  events: "stock" | "lifecycle"
  metadata: Record<string, string>
  counters: {
    turns: number
    toolCalls: number
    totalTokens: number
    [key: string]: unknown
  }
  createdAt: string
  /** When the run was last changed: created, a batch, a decision, a message, cancelled or ended. */
  lastActiveAt: string
  expiresAt: string
  [key: string]: unknown
}

export type ToolDefinition = {
  name: string
  description?: string
  /** JSON Schema draft 2020-12 of the arguments */
  inputSchema: Record<string, unknown>
  executor: {
    url: string
    timeoutMs?: number
    /** Longest a call may take in all while its executor's progress reports reset timeoutMs (an MCP server's tools); default 10 times timeoutMs */
    maxTimeoutMs?: number
    /** asked GET ?operationId=<id> for the outcome of an uncertain write */
    statusUrl?: string
  }
  readOnly?: boolean
  /** the executor applies a call once per Idempotency-Key, so a retry of an uncertain write is sent under the original one */
  idempotent?: boolean
  execution?: "auto" | "parallel" | "sequential"
  conflictKey?: string
  /** run: the conflict key keeps calls of one batch apart; tenant: no two calls with the same key run at once in any run of the tenant, on any replica (docs/scheduling.md) */
  conflictScope?: "run" | "tenant"
  /** How long a call waits for its tenant-scoped key held elsewhere before it is blocked (conflict_key_busy) */
  conflictWaitMs?: number
  trackExactRepeats?: boolean
  /** Members left out of the fingerprint (repeat and loop detection, operation ids); the executor still receives them */
  ignoreArguments?: Array<string>
  aliases?: Array<string>
  argumentAliases?: Record<string, string>
  rewrite?: Array<({
    op: "set"
    /** RFC 6901 JSON pointer */
    path: string
    value: unknown
  }) | ({
    op: "default"
    /** RFC 6901 JSON pointer */
    path: string
    value: unknown
  }) | ({
    op: "remove"
    /** RFC 6901 JSON pointer */
    path: string
  }) | ({
    op: "clamp"
    /** RFC 6901 JSON pointer */
    path: string
    min?: number
    max?: number
  })>
  requiredScopes?: Array<string>
  /** A person approves each call before it runs; nothing of its batch runs before that. */
  requiresApproval?: boolean
  action?: {
    projection?: string
    maxModelReceiptChars?: number
  }
}

export type Receipt = {
  operationId: string
  runId: string
  batchId: string
  callId: string
  tool: string
  intent: {
    action: string
    arguments: Record<string, unknown>
    [key: string]: unknown
  }
  status: "committed" | "rejected" | "failed" | "uncertain"
  result: (Record<string, unknown>) | null
  stateRevision: string | number | null
  timeline: Array<{
    event: string
    at: string
    [key: string]: unknown
  }>
  dispatch: {
    disposition: "dispatched" | "replayed" | "recovered" | "resolved"
    attempts: number
    [key: string]: unknown
  }
  timing: {
    dispatchedAt: string
    completedAt: string
    durationMs: number
    [key: string]: unknown
  }
  [key: string]: unknown
}

export type BatchResponse = {
  runId: string
  batchId: string
  turn: number
  /** `awaiting_approval` (answered 202) while calls wait for a decision; then `results` holds only the rejections. */
  state?: "completed" | "awaiting_approval"
  /** While awaiting approval: each call still waiting for a decision. */
  approvals?: Array<{
    callId: string
    tool: string
    arguments: Record<string, unknown>
    requestedAt: string
    expiresAt: string
    /** The call retries a write whose outcome is still unknown (this operation id): approved, it is `blocked`, not run, until that write is resolved (`POST /v1/receipts/{operationId}/resolve`). */
    blockedBy?: string
    [key: string]: unknown
  }>
  results: Array<{
    callId: string
    name: string
    status: "ok" | "error" | "rejected" | "uncertain" | "blocked" | "cancelled" | "terminated" | "projection_failed" | "denied"
    content: string
    isError: boolean
    details: {
      epoch?: number
      durationMs?: number
      startedAt?: string
      reason?: string
      message?: string
      blockedBy?: string
      blockedByOperation?: string
      blockedByRun?: string
      /** The call's conflict key as filled from its prepared arguments: calls with the same key never overlap. */
      conflictKey?: string
      /** Why the call started after its epoch began: every slot (`maxConcurrentTools`) was taken, or a running call held its conflict key. */
      waited?: {
        for: "slot" | "conflict_key"
        /** With `conflict_key`: the call that held the key. */
        callId?: string
        [key: string]: unknown
      }
      tool?: string
      httpStatus?: number
      cause?: string
      operationId?: string
      executor?: Record<string, unknown>
      receipt?: Receipt
      projectionProblem?: string
      /** The decision on a call held for approval. */
      approval?: {
        decision: "approved" | "denied" | "expired"
        at: string
        /** Who decided: the tenant and the key's name, never the key. */
        by?: {
          tenant: string
          name?: string
          [key: string]: unknown
        }
        reason?: string
        edited?: boolean
        /** With `edited`: the arguments as held and as the approver's edit made them (prepared, or as far as preparation got). Never logged. */
        arguments?: {
          original: Record<string, unknown>
          edited: unknown
          [key: string]: unknown
        }
        [key: string]: unknown
      }
      [key: string]: unknown
    }
    [key: string]: unknown
  }>
  events: Array<{
    seq: number
    type: "batch.started" | "epoch.started" | "call.started" | "call.progress" | "call.completed" | "epoch.settled" | "tool.repeat_detected" | "run.terminated" | "batch.completed" | "batch.awaiting_approval" | "call.awaiting_approval" | "call.approved" | "call.denied"
    at: string
    callId?: string
    tool?: string
    epoch?: number
    status?: string
    durationMs?: number
    action?: string
    /** tool.repeat_detected: exact, cycle, errors or no_progress */
    kind?: string
    count?: number
    /** call.progress: the executor's progress so far (an MCP server's notifications/progress) */
    progress?: number
    /** call.progress: the total, when the executor knows one */
    total?: number
    reason?: string
    size?: number
    [key: string]: unknown
  }>
  policyMessages: Array<{
    type: "agent_policy"
    content: string
    [key: string]: unknown
  }>
  continue: boolean
  run: {
    state: "active" | "terminated" | "cancelled" | "ended"
    terminationReason?: "exact_repeat" | "repeat_cycle" | "consecutive_errors" | "no_progress" | "max_turns" | "max_tool_calls" | "max_total_tokens" | "timeout" | "projection_failed" | "cancelled" | "ended"
    [key: string]: unknown
  }
  /** Only when the batch came in a provider format: what to append to the conversation before the next model request, in that format (tool results in source order, then one item per policy message). */
  messages?: Array<Record<string, unknown>>
  [key: string]: unknown
}

export type Summary = {
  runId?: string
  state?: string
  since?: string
  runs?: number
  turns: number
  calls: number
  callsByStatus: Record<string, number>
  epochs: number
  largestEpoch: number
  toolTimeMs: number
  wallTimeMs: number
  /** Time in tools minus wall time: what overlapping saved. */
  timeSavedMs: number
  repeatAdvisories: number
  repeatTerminations: number
  /** Advisories and terminations of each loop kind; exact equals repeatAdvisories and repeatTerminations */
  loopDetections: {
    exact: {
      advisories: number
      terminations: number
      [key: string]: unknown
    }
    cycle: {
      advisories: number
      terminations: number
      [key: string]: unknown
    }
    errors: {
      advisories: number
      terminations: number
      [key: string]: unknown
    }
    no_progress: {
      advisories: number
      terminations: number
      [key: string]: unknown
    }
    [key: string]: unknown
  }
  projectionFailures: number
  uncertainWrites: number
  blockedCalls: number
  /** Decisions on calls held for a person. */
  approvals: {
    approved: number
    denied: number
    expired: number
    [key: string]: unknown
  }
  [key: string]: unknown
}

export type McpServer = {
  name: string
  transport: "stdio" | "streamableHttp"
  url?: string
  command?: string
  /** The names of the headers sent; their values are never shown. */
  headerNames?: Array<string>
  /** How toolgate gets its access token; never the secret, the key or the token. */
  oauth?: {
    clientId: string
    method: "client_secret_basic" | "private_key_jwt"
    tokenUrl?: string
    issuer?: string
    scope?: string
    resource?: string
    /** The environment variable the secret or key is read from. */
    secretFrom?: string
  }
  trust: "untrusted" | "trusted"
  prefix: string
  pinning: "off" | "on"
  include?: Array<string>
  exclude?: Array<string>
  timeoutMs: number
  maxTimeoutMs: number
  overrides: Record<string, Record<string, unknown>>
  state: "connecting" | "ready" | "down"
  lastError: string | null
  /** The imported tool names. */
  tools: Array<string>
  refreshedAt: string | null
}

/** A request the HTTP layer could not read; no route ran. */
export type ClientError = {
  error: string
  message: string
  statusCode: number
  [key: string]: unknown
}

/** Every operation by its operationId: what it takes and what each status answers. */
export interface Operations {
  /** The process is alive */
  getHealth: {
    input: {  }
    responses: { "200": {
        status: string
        [key: string]: unknown
      }; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** The service takes work */
  getReadiness: {
    input: {  }
    responses: { "200": {
        status: string
        [key: string]: unknown
      }; "500": Problem; "503": {
        status: string
        [key: string]: unknown
      }; "4XX": ClientError }
  }
  /** Prometheus metrics */
  getMetrics: {
    input: {  }
    responses: { "200": string; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** List registered tools */
  listTools: {
    input: {  }
    responses: { "200": {
        tools: Array<ToolDefinition>
        [key: string]: unknown
      }; "401": Problem; "403": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** One tool definition */
  getTool: {
    input: { params: { name: string } }
    responses: { "200": ToolDefinition; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Register or replace a tool */
  putTool: {
    input: { params: { name: string }; body: {
        description?: string
        /** JSON Schema draft 2020-12 of the arguments */
        inputSchema: Record<string, unknown>
        executor: {
          url: string
          timeoutMs?: number
          /** Longest a call may take in all while its executor's progress reports reset timeoutMs (an MCP server's tools); default 10 times timeoutMs */
          maxTimeoutMs?: number
          /** asked GET ?operationId=<id> for the outcome of an uncertain write */
          statusUrl?: string
        }
        readOnly?: boolean
        /** the executor applies a call once per Idempotency-Key, so a retry of an uncertain write is sent under the original one */
        idempotent?: boolean
        execution?: "auto" | "parallel" | "sequential"
        conflictKey?: string
        /** run: the conflict key keeps calls of one batch apart; tenant: no two calls with the same key run at once in any run of the tenant, on any replica (docs/scheduling.md) */
        conflictScope?: "run" | "tenant"
        /** How long a call waits for its tenant-scoped key held elsewhere before it is blocked (conflict_key_busy) */
        conflictWaitMs?: number
        trackExactRepeats?: boolean
        /** Members left out of the fingerprint (repeat and loop detection, operation ids); the executor still receives them */
        ignoreArguments?: Array<string>
        aliases?: Array<string>
        argumentAliases?: Record<string, string>
        rewrite?: Array<({
          op: "set"
          /** RFC 6901 JSON pointer */
          path: string
          value: unknown
        }) | ({
          op: "default"
          /** RFC 6901 JSON pointer */
          path: string
          value: unknown
        }) | ({
          op: "remove"
          /** RFC 6901 JSON pointer */
          path: string
        }) | ({
          op: "clamp"
          /** RFC 6901 JSON pointer */
          path: string
          min?: number
          max?: number
        })>
        requiredScopes?: Array<string>
        /** A person approves each call before it runs; nothing of its batch runs before that. */
        requiresApproval?: boolean
        action?: {
          projection?: string
          maxModelReceiptChars?: number
        }
        name?: string
      } }
    responses: { "200": ToolDefinition; "201": ToolDefinition; "400": Problem; "401": Problem; "403": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Remove a tool */
  deleteTool: {
    input: { params: { name: string } }
    responses: { "204": null; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** The tenant's runs, most recently used first */
  listRuns: {
    input: { query?: { limit?: number; cursor?: string; state?: "active" | "terminated" | "cancelled" | "ended" } }
    responses: { "200": {
        runs: Array<Run>
        /** Pass as `cursor` for the next page; null on the last page. */
        next: string | null
        [key: string]: unknown
      }; "400": Problem; "401": Problem; "403": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Create a run */
  createRun: {
    input: { body: {
        runId?: string
        toolExecution?: "sequential" | "safeParallel" | "parallel"
        maxConcurrentTools?: number
        limits?: {
          exactToolRepeatAdvisoryThreshold?: number
          exactToolRepeatTerminationThreshold?: number
          maxTurns?: number | null
          maxToolCalls?: number | null
          timeoutMs?: number | null
          maxTotalTokens?: number | null
          cycleAdvisoryRepetitions?: number
          cycleTerminationRepetitions?: number
          consecutiveErrorAdvisory?: number
          consecutiveErrorTermination?: number
          noProgressAdvisory?: number
          noProgressTermination?: number
        }
        tools?: (Array<string>) | null
        events?: "stock" | "lifecycle"
        metadata?: Record<string, string>
      } }
    responses: { "201": Run; "400": Problem; "401": Problem; "403": Problem; "409": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Read a run */
  getRun: {
    input: { params: { runId: string } }
    responses: { "200": Run; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** End a run and free its state */
  endRun: {
    input: { params: { runId: string } }
    responses: { "200": Run; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** The tools to offer the model in this run */
  listRunTools: {
    input: { params: { runId: string }; query?: { format?: "openaiChat" | "openaiResponses" | "anthropic" | "gemini" } }
    responses: { "200": ({
        tools: Array<{
          name: string
          description: string
          inputSchema: Record<string, unknown>
          [key: string]: unknown
        }>
        [key: string]: unknown
      }) | ({
        /** In the requested provider's shape, ready to pass as its request's `tools`. */
        tools: Array<Record<string, unknown>>
        [key: string]: unknown
      }); "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Record a genuine user message (resets the exact-repeat streak) */
  recordMessage: {
    input: { params: { runId: string }; body: {
        kind: "steering" | "follow_up"
        [key: string]: unknown
      } }
    responses: { "200": Run; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "409": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Cancel the batch in flight and the run */
  cancelRun: {
    input: { params: { runId: string } }
    responses: { "200": Run; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** A run's performance summary */
  getRunSummary: {
    input: { params: { runId: string } }
    responses: { "200": Summary; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Aggregate performance summary of every run since start */
  getSummary: {
    input: {  }
    responses: { "200": Summary; "401": Problem; "403": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** A run's batches, latest turn first */
  listRunBatches: {
    input: { params: { runId: string }; query?: { limit?: number; beforeTurn?: number } }
    responses: { "200": {
        batches: Array<{
          batchId: string
          /** `completed`, or `running` (`awaiting_approval` while it waits for a person) for the batch in flight (listed first, on the first page). */
          state: string
          turn?: number
          /** How many calls the batch had. */
          calls?: number
          /** Its calls counted by result status. */
          statuses?: Record<string, number>
          completedAt?: string
          [key: string]: unknown
        }>
        /** Pass as `beforeTurn` for the next page; null on the last page. */
        next: number | null
        [key: string]: unknown
      }; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Run the tool calls of one model turn */
  runBatch: {
    input: { params: { runId: string }; body: {
        batchId?: string
        calls?: Array<{
          id: string
          name: string
          arguments?: string | (Record<string, unknown>) | null
        }>
        /** A Chat Completions response (`choices[0]` is used), or its assistant `message`. */
        openaiChat?: {
          /** only `choices[0]` is read */
          choices?: Array<{
            message: {
              role?: "assistant"
              tool_calls?: (Array<{
                id: string
                /** `function` calls are run; calls of other types (`custom`) are answered, not run */
                type?: string
                function?: {
                  name: string
                  /** JSON text, passed on as sent */
                  arguments?: string
                  [key: string]: unknown
                }
                [key: string]: unknown
              }>) | null
              [key: string]: unknown
            }
            finish_reason?: string | null
            [key: string]: unknown
          }>
          usage?: ({
            prompt_tokens?: number
            completion_tokens?: number
            [key: string]: unknown
          }) | null
          role?: "assistant"
          tool_calls?: (Array<{
            id: string
            /** `function` calls are run; calls of other types (`custom`) are answered, not run */
            type?: string
            function?: {
              name: string
              /** JSON text, passed on as sent */
              arguments?: string
              [key: string]: unknown
            }
            [key: string]: unknown
          }>) | null
          [key: string]: unknown
        }
        /** A Responses API response, or its `output` array. */
        openaiResponses?: ({
          output: Array<{
            /** `function_call` items are run; `custom_tool_call` items are answered, not run */
            type: string
            call_id?: string
            name?: string
            /** JSON text, passed on as sent */
            arguments?: string
            /** `incomplete` marks the response incomplete */
            status?: string
            [key: string]: unknown
          }>
          /** `incomplete` marks the response incomplete */
          status?: string
          usage?: ({
            input_tokens?: number
            output_tokens?: number
            [key: string]: unknown
          }) | null
          [key: string]: unknown
        }) | (Array<{
          /** `function_call` items are run; `custom_tool_call` items are answered, not run */
          type: string
          call_id?: string
          name?: string
          /** JSON text, passed on as sent */
          arguments?: string
          /** `incomplete` marks the response incomplete */
          status?: string
          [key: string]: unknown
        }>)
        /** A Messages API response, or an assistant message `{role, content}`. */
        anthropic?: {
          role?: "assistant"
          content: (Array<{
            /** only `tool_use` blocks are read */
            type: string
            id?: string
            name?: string
            /** the arguments, passed on as sent */
            input?: Record<string, unknown>
            [key: string]: unknown
          }>) | string
          stop_reason?: string | null
          usage?: ({
            input_tokens?: number
            output_tokens?: number
            [key: string]: unknown
          }) | null
          [key: string]: unknown
        }
        /** A `generateContent` response (`candidates[0]` is used), or a `Content` `{role: "model", parts}`. */
        gemini?: {
          /** only `candidates[0]` is read */
          candidates?: Array<{
            content?: {
              role?: "model"
              parts?: Array<{
                functionCall?: {
                  id?: string
                  name: string
                  /** the arguments, passed on as sent */
                  args?: Record<string, unknown>
                  [key: string]: unknown
                }
                [key: string]: unknown
              }>
              [key: string]: unknown
            }
            /** anything but `STOP` marks the response incomplete; absent counts as `STOP` */
            finishReason?: string
            [key: string]: unknown
          }>
          usageMetadata?: {
            promptTokenCount?: number
            candidatesTokenCount?: number
            [key: string]: unknown
          }
          role?: "model"
          parts?: Array<{
            functionCall?: {
              id?: string
              name: string
              /** the arguments, passed on as sent */
              args?: Record<string, unknown>
              [key: string]: unknown
            }
            [key: string]: unknown
          }>
          [key: string]: unknown
        }
        usage?: {
          inputTokens?: number
          outputTokens?: number
        }
      } }
    responses: { "200": BatchResponse; "202": BatchResponse; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "409": Problem; "413": Problem; "415": Problem; "422": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** A run's receipts, in dispatch order */
  listRunReceipts: {
    input: { params: { runId: string } }
    responses: { "200": {
        receipts: Array<Receipt>
        [key: string]: unknown
      }; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** One receipt */
  getReceipt: {
    input: { params: { operationId: string } }
    responses: { "200": Receipt; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** This OpenAPI document */
  getOpenApi: {
    input: {  }
    responses: { "200": Record<string, unknown>; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** A batch as it stands */
  getBatch: {
    input: { params: { runId: string; batchId: string } }
    responses: { "200": BatchResponse | ({
        runId: string
        batchId: string
        /** `running`. */
        state: string
        [key: string]: unknown
      }); "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** List MCP servers and their state */
  listMcpServers: {
    input: {  }
    responses: { "200": {
        mcpServers: Array<McpServer>
        [key: string]: unknown
      }; "401": Problem; "403": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** One MCP server */
  getMcpServer: {
    input: { params: { name: string } }
    responses: { "200": McpServer; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Add or replace a Streamable HTTP MCP server */
  putMcpServer: {
    input: { params: { name: string }; body: {
        /** Whether readOnlyHint and idempotentHint are believed. */
        trust?: "untrusted" | "trusted"
        /** Prepended to each imported tool's name; default the server's name and an underscore (model APIs refuse dots in tool names). */
        prefix?: string
        /** Whether tool definitions are pinned and changes quarantined until an admin approves them; default on for untrusted servers, off for trusted ones. */
        pinning?: "off" | "on"
        /** Only these of the server's tools (its own names). */
        include?: Array<string>
        /** None of these of the server's tools (its own names). */
        exclude?: Array<string>
        /** Timeout of each tools/call. */
        timeoutMs?: number
        /** Longest a tools/call may take in all while the server's progress notifications reset its timeout; default 10 times timeoutMs. */
        maxTimeoutMs?: number
        /** Overrides by the server's own tool name; they win over annotations. */
        tools?: Record<string, {
            description?: string
            readOnly?: boolean
            /** the executor applies a call once per Idempotency-Key, so a retry of an uncertain write is sent under the original one */
            idempotent?: boolean
            execution?: "auto" | "parallel" | "sequential"
            conflictKey?: string
            /** run: the conflict key keeps calls of one batch apart; tenant: no two calls with the same key run at once in any run of the tenant, on any replica (docs/scheduling.md) */
            conflictScope?: "run" | "tenant"
            /** How long a call waits for its tenant-scoped key held elsewhere before it is blocked (conflict_key_busy) */
            conflictWaitMs?: number
            trackExactRepeats?: boolean
            /** Members left out of the fingerprint (repeat and loop detection, operation ids); the executor still receives them */
            ignoreArguments?: Array<string>
            aliases?: Array<string>
            argumentAliases?: Record<string, string>
            rewrite?: Array<({
              op: "set"
              /** RFC 6901 JSON pointer */
              path: string
              value: unknown
            }) | ({
              op: "default"
              /** RFC 6901 JSON pointer */
              path: string
              value: unknown
            }) | ({
              op: "remove"
              /** RFC 6901 JSON pointer */
              path: string
            }) | ({
              op: "clamp"
              /** RFC 6901 JSON pointer */
              path: string
              min?: number
              max?: number
            })>
            requiredScopes?: Array<string>
            /** A person approves each call before it runs; nothing of its batch runs before that. */
            requiresApproval?: boolean
            action?: {
              projection?: string
              maxModelReceiptChars?: number
            }
          }>
        transport: "streamableHttp"
        url: string
        headers?: Record<string, string>
        oauth?: {
          clientId: string
          /** Sent by HTTP Basic (client_secret_basic). Never shown or logged. */
          clientSecret?: string
          /** The name of an environment variable of toolgate that holds the secret (MCP_SECRET_*). */
          clientSecretEnv?: string
          /** A signed JWT assertion (private_key_jwt, RFC 7523) in place of a secret. */
          privateKeyJwt?: {
            /** PKCS#8 or PKCS#1/SEC1 PEM. Never shown or logged. */
            privateKey?: string
            /** The name of an environment variable of toolgate that holds the secret (MCP_SECRET_*). */
            privateKeyEnv?: string
            alg: "RS256" | "ES256"
            kid?: string
          }
          tokenUrl?: string
          /** The authorization server's issuer: discovery must find this one (else credentials go wherever the MCP server's metadata points); the JWT assertion's aud. */
          issuer?: string
          scope?: string
          resource?: string
        }
        name?: string
      } }
    responses: { "200": McpServer; "201": McpServer; "400": Problem; "401": Problem; "403": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Remove an MCP server */
  deleteMcpServer: {
    input: { params: { name: string } }
    responses: { "204": null; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** List an MCP server's tools again */
  refreshMcpServer: {
    input: { params: { name: string } }
    responses: { "200": McpServer; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** An MCP server's pinned and quarantined tools */
  getMcpServerPins: {
    input: { params: { name: string } }
    responses: { "200": {
        tools: Array<{
          /** The imported name. */
          name: string
          /** The server's own name. */
          serverToolName: string
          state: "pinned" | "quarantined"
          /** The pinned definition; null for a tool new since the pins were taken. */
          pinned: (Record<string, unknown>) | null
          /** The definition the server lists now. */
          current: Record<string, unknown>
          /** What differs, in words. */
          changes: Array<string>
        }>
        [key: string]: unknown
      }; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Approve quarantined tools */
  approveMcpServerPins: {
    input: { params: { name: string }; body: {
        approve: Array<string>
      } }
    responses: { "200": {
        tools: Array<{
          /** The imported name. */
          name: string
          /** The server's own name. */
          serverToolName: string
          state: "pinned" | "quarantined"
          /** The pinned definition; null for a tool new since the pins were taken. */
          pinned: (Record<string, unknown>) | null
          /** The definition the server lists now. */
          current: Record<string, unknown>
          /** What differs, in words. */
          changes: Array<string>
        }>
        [key: string]: unknown
      }; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** MCP endpoint (GET): a session on a run of its own */
  mcpGet: {
    input: {  }
    responses: { "200": unknown; "401": Problem; "403": Problem; "413": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** MCP endpoint (POST): a session on a run of its own */
  mcpPost: {
    input: {  }
    responses: { "200": unknown; "202": unknown; "400": Problem; "401": Problem; "403": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** MCP endpoint (DELETE): a session on a run of its own */
  mcpDelete: {
    input: {  }
    responses: { "200": unknown; "400": Problem; "401": Problem; "403": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** MCP endpoint (GET): a session bound to an existing run */
  mcpRunGet: {
    input: { params: { runId: string } }
    responses: { "200": unknown; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "413": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** MCP endpoint (POST): a session bound to an existing run */
  mcpRunPost: {
    input: { params: { runId: string } }
    responses: { "200": unknown; "202": unknown; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** MCP endpoint (DELETE): a session bound to an existing run */
  mcpRunDelete: {
    input: { params: { runId: string } }
    responses: { "200": unknown; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** A run's unresolved uncertain writes, oldest first */
  listRunUncertainWrites: {
    input: { params: { runId: string } }
    responses: { "200": {
        runId: string
        uncertain: Array<{
          operationId: string
          callId: string
          batchId: string
          tool: string
          fingerprint: string
          conflictKey: string | null
          /** an action tool: its receipt is uncertain too */
          action: boolean
          /** when it was recorded (its batch finished), ISO 8601 */
          since: string
          [key: string]: unknown
        }>
        [key: string]: unknown
      }; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** The tenant's unresolved uncertain writes, oldest first */
  listTenantUncertainWrites: {
    input: {  }
    responses: { "200": {
        uncertain: Array<{
          operationId: string
          runId: string
          callId: string
          tool: string
          conflictKey: string | null
          /** tenant: the write blocks later writes with its conflict key from every run of the tenant until it is resolved */
          conflictScope: "run" | "tenant"
          /** why its outcome is unknown: the exchange's cause (`timeout`, `connection_closed`, …) or `replica_lost` (the replica sending it died) */
          cause: string
          /** when it was recorded, ISO 8601 */
          since: string
          [key: string]: unknown
        }>
        [key: string]: unknown
      }; "401": Problem; "403": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Resolves an unresolved uncertain write */
  resolveUncertainWrite: {
    input: { params: { operationId: string }; body: ({
        status: "committed" | "rejected" | "failed"
        result?: Record<string, unknown>
        stateRevision?: string | number
      }) | ({
        recheck: true
      }) }
    responses: { "200": {
        operationId: string
        runId: string
        resolved: boolean
        how?: "manual" | "status_url"
        status?: "committed" | "rejected" | "failed"
        /** why a recheck resolved nothing: the executor does not know yet, the question failed, or another replica is asking right now */
        check?: "unknown" | "error" | "busy"
        cause?: string
        receipt?: Receipt
        [key: string]: unknown
      }; "400": Problem; "401": Problem; "403": Problem; "404": Problem; "409": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Every call of the tenant's runs waiting for a decision */
  listApprovals: {
    input: {  }
    responses: { "200": {
        approvals: Array<{
          runId: string
          batchId: string
          /** A question an MCP server asks during this running call: approving answers `accept` with the decision's `content`, denying `decline`, expiry `cancel`. */
          elicitation?: {
            message: string
            requestedSchema: Record<string, unknown>
            [key: string]: unknown
          }
          /** What the call is and what surrounds it: tool names and statuses only. */
          context?: {
            /** The tool's description. */
            description?: string
            /** The batch's other calls: `awaiting_approval`, `approved`, `denied`, `waiting` (needs no decision; runs with the batch) or `rejected`. */
            batch: Array<{
              callId: string
              tool: string
              status: string
              [key: string]: unknown
            }>
            /** The run's last calls before this batch (at most 5), oldest first, with their result status. */
            recent?: Array<{
              callId: string
              tool: string
              status: string
              batchId: string
              turn: number
              [key: string]: unknown
            }>
            [key: string]: unknown
          }
          callId: string
          tool: string
          arguments: Record<string, unknown>
          requestedAt: string
          expiresAt: string
          /** The call retries a write whose outcome is still unknown (this operation id): approved, it is `blocked`, not run, until that write is resolved (`POST /v1/receipts/{operationId}/resolve`). */
          blockedBy?: string
          [key: string]: unknown
        }>
        [key: string]: unknown
      }; "401": Problem; "403": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
  /** Approve, edit or deny held calls */
  decideApprovals: {
    input: { params: { runId: string; batchId: string }; body: {
        decisions: Array<{
          callId: string
          approve: boolean
          /** A denial's reason: the model reads it. */
          reason?: string
          /** An approval's edited arguments: prepared again through every stage; failing makes the call `rejected`. */
          arguments?: string | (Record<string, unknown>)
          /** Approving an MCP server's question (`elicitation`): the answer, matching its `requestedSchema`. */
          content?: Record<string, unknown>
        }>
      } }
    responses: { "200": BatchResponse; "202": BatchResponse | ({
        runId: string
        batchId: string
        /** The call ids whose questions were answered. */
        answered: Array<string>
        [key: string]: unknown
      }); "400": Problem; "401": Problem; "403": Problem; "404": Problem; "409": Problem; "413": Problem; "415": Problem; "429": Problem; "500": Problem; "503": Problem; "4XX": ClientError }
  }
}

/** Each operation's method and path template. */
export const OPERATIONS = {
  getHealth: { method: 'GET', path: '/healthz' },
  getReadiness: { method: 'GET', path: '/readyz' },
  getMetrics: { method: 'GET', path: '/metrics' },
  listTools: { method: 'GET', path: '/v1/tools' },
  getTool: { method: 'GET', path: '/v1/tools/{name}' },
  putTool: { method: 'PUT', path: '/v1/tools/{name}' },
  deleteTool: { method: 'DELETE', path: '/v1/tools/{name}' },
  listRuns: { method: 'GET', path: '/v1/runs' },
  createRun: { method: 'POST', path: '/v1/runs' },
  getRun: { method: 'GET', path: '/v1/runs/{runId}' },
  endRun: { method: 'DELETE', path: '/v1/runs/{runId}' },
  listRunTools: { method: 'GET', path: '/v1/runs/{runId}/tools' },
  recordMessage: { method: 'POST', path: '/v1/runs/{runId}/messages' },
  cancelRun: { method: 'POST', path: '/v1/runs/{runId}/cancel' },
  getRunSummary: { method: 'GET', path: '/v1/runs/{runId}/summary' },
  getSummary: { method: 'GET', path: '/v1/summary' },
  listRunBatches: { method: 'GET', path: '/v1/runs/{runId}/batches' },
  runBatch: { method: 'POST', path: '/v1/runs/{runId}/batches' },
  listRunReceipts: { method: 'GET', path: '/v1/runs/{runId}/receipts' },
  getReceipt: { method: 'GET', path: '/v1/receipts/{operationId}' },
  getOpenApi: { method: 'GET', path: '/openapi.json' },
  getBatch: { method: 'GET', path: '/v1/runs/{runId}/batches/{batchId}' },
  listMcpServers: { method: 'GET', path: '/v1/mcp-servers' },
  getMcpServer: { method: 'GET', path: '/v1/mcp-servers/{name}' },
  putMcpServer: { method: 'PUT', path: '/v1/mcp-servers/{name}' },
  deleteMcpServer: { method: 'DELETE', path: '/v1/mcp-servers/{name}' },
  refreshMcpServer: { method: 'POST', path: '/v1/mcp-servers/{name}/refresh' },
  getMcpServerPins: { method: 'GET', path: '/v1/mcp-servers/{name}/pins' },
  approveMcpServerPins: { method: 'POST', path: '/v1/mcp-servers/{name}/pins' },
  mcpGet: { method: 'GET', path: '/mcp' },
  mcpPost: { method: 'POST', path: '/mcp' },
  mcpDelete: { method: 'DELETE', path: '/mcp' },
  mcpRunGet: { method: 'GET', path: '/v1/runs/{runId}/mcp' },
  mcpRunPost: { method: 'POST', path: '/v1/runs/{runId}/mcp' },
  mcpRunDelete: { method: 'DELETE', path: '/v1/runs/{runId}/mcp' },
  listRunUncertainWrites: { method: 'GET', path: '/v1/runs/{runId}/uncertain' },
  listTenantUncertainWrites: { method: 'GET', path: '/v1/uncertain' },
  resolveUncertainWrite: { method: 'POST', path: '/v1/receipts/{operationId}/resolve' },
  listApprovals: { method: 'GET', path: '/v1/approvals' },
  decideApprovals: { method: 'POST', path: '/v1/runs/{runId}/batches/{batchId}/approvals' },
} as const
