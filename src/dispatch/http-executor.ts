import { IsoTime } from '../iso-time.js'
import type { ExecutorClient } from './client.js'
import type { Executor, HttpAnswer, SendOptions } from './executor.js'
import { executorBody, executorBodyPrefix } from './executor-body.js'

const DEADLINES = new IsoTime()

/**
 * toolgate's own executor protocol (SPEC section 7) as an executor: `POST
 * executor.url` with the call's body, its operation id as Idempotency-Key,
 * and its trace context. One per process, sharing the client's pools.
 */
export class HttpExecutor implements Executor {
  readonly #client: ExecutorClient
  /** The body prefix of the batch last sent for: a batch's calls come together, so it is written once per batch. */
  #prefix = { runId: '', batchId: '', text: executorBodyPrefix('', '') }

  constructor (client: ExecutorClient) {
    this.#client = client
  }

  send (opts: SendOptions): Promise<HttpAnswer> {
    const { call, operationId } = opts
    const timeoutMs = call.tool.executor.timeoutMs
    return this.#client.post({
      url: call.tool.executor.url,
      timeoutMs,
      body: executorBody(this.#prefixOf(opts.runId, opts.batchId), call, operationId, DEADLINES.at(Date.now() + timeoutMs), opts.argumentsJson),
      idempotencyKey: operationId,
      trace: opts.trace,
      fencingToken: call.fencingToken
    })
  }

  #prefixOf (runId: string, batchId: string): string {
    const last = this.#prefix
    if (last.runId === runId && last.batchId === batchId) return last.text
    return (this.#prefix = { runId, batchId, text: executorBodyPrefix(runId, batchId) }).text
  }
}
