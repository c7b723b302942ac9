import { IsoTime } from '../iso-time.js'
import type { ExecutorClient } from './client.js'
import type { DispatchContext, Executor, ExecutorCall, HttpAnswer } from './executor.js'
import { executorBody } from './executor-body.js'

const DEADLINES = new IsoTime()

/**
 * toolgate's own executor protocol (SPEC section 7) as an executor: `POST
 * executor.url` with the call's body, its operation id as Idempotency-Key,
 * and its trace context. One per process, sharing the client's pools.
 */
export class HttpExecutor implements Executor {
  readonly #client: ExecutorClient

  constructor (client: ExecutorClient) {
    this.#client = client
  }

  send (ctx: DispatchContext, call: ExecutorCall, operationId: string,
    trace: Readonly<Record<string, string>> | undefined, argumentsJson: string | undefined): Promise<HttpAnswer> {
    const timeoutMs = call.tool.executor.timeoutMs
    return this.#client.post({
      url: call.tool.executor.url,
      timeoutMs,
      body: executorBody(ctx.bodyPrefix, call, operationId, DEADLINES.at(Date.now() + timeoutMs), argumentsJson),
      idempotencyKey: operationId,
      trace,
      fencingToken: call.fencingToken
    })
  }
}
