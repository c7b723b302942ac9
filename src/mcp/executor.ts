import type { DispatchContext, Executor, ExecutorAnswer, ExecutorCall } from '../dispatch/executor.js'
import type { CallRelays } from '../dispatch/relays.js'
import type { McpConnection } from './connection.js'
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
  /** The callers of calls, for what the server sends them during a call (toolgate's own MCP endpoint). */
  readonly #relays: CallRelays | undefined

  constructor (connection: McpConnection, remoteName: string, relays?: CallRelays) {
    this.#connection = connection
    this.#remoteName = remoteName
    this.#relays = relays
  }

  send (ctx: DispatchContext, call: ExecutorCall, operationId: string, trace: Readonly<Record<string, string>> | undefined): Promise<ExecutorAnswer> {
    const relay = this.#relays?.get(ctx.runId, call.id)
    if (trace === undefined) return this.#connection.call(this.#remoteName, call.arguments, operationId, call.tool.executor.timeoutMs, undefined, relay)
    return withClientSpan(trace, () => this.#shape(),
      (headers) => this.#connection.call(this.#remoteName, call.arguments, operationId, call.tool.executor.timeoutMs, headers, relay), settleAnswer)
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
