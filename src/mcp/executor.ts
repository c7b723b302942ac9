import type { DispatchContext, Executor, ExecutorAnswer, ExecutorCall } from '../dispatch/executor.js'
import type { McpConnection } from './connection.js'

/**
 * The executor of one imported tool: `tools/call` of its name on its
 * server, with the prepared arguments and the operation id in `_meta`.
 * Made once per tool at import, not per call.
 */
export class McpToolExecutor implements Executor {
  readonly #connection: McpConnection
  readonly #remoteName: string

  constructor (connection: McpConnection, remoteName: string) {
    this.#connection = connection
    this.#remoteName = remoteName
  }

  send (_ctx: DispatchContext, call: ExecutorCall, operationId: string): Promise<ExecutorAnswer> {
    return this.#connection.call(this.#remoteName, call.arguments, operationId, call.tool.executor.timeoutMs)
  }
}
