import type { DispatchContext, Executor, ExecutorAnswer, ExecutorCall } from '../dispatch/executor.js'
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

  constructor (connection: McpConnection, remoteName: string) {
    this.#connection = connection
    this.#remoteName = remoteName
  }

  send (_ctx: DispatchContext, call: ExecutorCall, operationId: string, trace: Readonly<Record<string, string>> | undefined): Promise<ExecutorAnswer> {
    if (trace === undefined) return this.#connection.call(this.#remoteName, call.arguments, operationId, call.tool.executor.timeoutMs)
    return withClientSpan(trace, () => this.#shape(),
      (headers) => this.#connection.call(this.#remoteName, call.arguments, operationId, call.tool.executor.timeoutMs, headers), settleAnswer)
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
