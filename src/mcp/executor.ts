import type { Executor, ExecutorAnswer, SendOptions } from '../dispatch/executor.js'
import type { CallRelays } from '../dispatch/relays.js'
import type { Elicitations } from '../approvals/elicitations.js'
import type { CallHooks, McpConnection } from './connection.js'

/** Whether a result's structuredContent matches the tool's outputSchema; a promise when the check ran on the validation thread (a large answer). */
/** Checks an answer's structuredContent against the tool's outputSchema; `owner` (the calling tenant) takes its turn if the check goes to the validation thread. */
export type OutputCheck = (structured: unknown, owner?: string) => boolean | Promise<boolean>
import { type ClientSpanShape, settleAnswer, withClientSpan } from '../telemetry/client-spans.js'

/**
 * The executor of one imported tool: `tools/call` of its name on its
 * server, with the prepared arguments, and the operation id and trace
 * context in `_meta`. With tracing on, each call is a CLIENT span
 * (OpenTelemetry's MCP conventions) under the call's span.
 * Made once per tool at import, not per call.
 */
export class McpToolExecutor implements Executor {
  readonly #connection: McpConnection
  readonly #remoteName: string
  readonly #output: OutputCheck | undefined
  /** The callers of calls, for what the server sends them during a call (toolgate's own MCP endpoint). */
  readonly #relays: CallRelays | undefined

  /** `output` checks a result's structuredContent against the tool's outputSchema (SPEC §18), when it has one. */
  /** Who answers the server's questions about a call (SPEC section 18). */
  readonly #elicitations: Elicitations | undefined

  constructor (connection: McpConnection, remoteName: string, output?: OutputCheck, relays?: CallRelays, elicitations?: Elicitations) {
    this.#connection = connection
    this.#remoteName = remoteName
    this.#output = output
    this.#relays = relays
    this.#elicitations = elicitations
  }

  async send (opts: SendOptions): Promise<ExecutorAnswer> {
    const { call, operationId, trace } = opts
    const ctx = opts
    const relay = this.#relays?.get(ctx.runId, call.id)
    const elicitations = this.#elicitations
    const onProgress = opts.onProgress
    const hooks: CallHooks = {
      relay,
      fencingToken: call.fencingToken,
      maxTimeoutMs: call.tool.executor.maxTimeoutMs,
      progress: onProgress,
      elicit: elicitations === undefined
        ? undefined
        : (question, signals) => elicitations.ask({ runId: ctx.runId, batchId: ctx.batchId, callId: call.id, tool: call.tool.name, arguments: call.arguments }, question, relay, signals)
    }
    const answer = trace === undefined
      ? await this.#connection.call(this.#remoteName, call.arguments, operationId, call.tool.executor.timeoutMs, undefined, hooks)
      : await withClientSpan(trace, () => this.#shape(),
        (headers) => this.#connection.call(this.#remoteName, call.arguments, operationId, call.tool.executor.timeoutMs, headers, hooks), settleAnswer)
    return await this.#checked(answer, opts.tenant)
  }

  /**
   * A result that is not an error must carry structuredContent matching the
   * outputSchema; one that does not is `invalid_output`: the tool may have
   * done its work, but what it answered cannot be trusted (a read is an
   * error, a write uncertain).
   */
  async #checked (answer: ExecutorAnswer, owner: string | undefined): Promise<ExecutorAnswer> {
    if (this.#output === undefined || answer.kind !== 'tool_result' || answer.result.isError === true) return answer
    const structured = answer.result.structuredContent
    if (structured !== undefined && await this.#output(structured, owner)) return answer
    return { kind: 'unknown', code: 'invalid_output' }
  }

  #shape (): ClientSpanShape {
    return {
      name: `tools/call ${this.#remoteName}`,
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': this.#remoteName,
        'network.transport': this.#connection.definition.transport === 'stdio' ? 'pipe' : 'tcp',
        'toolgate.mcp.server': this.#connection.settings.name
      }
    }
  }
}
