/**
 * What a call's executor may pass to the caller of the call while it runs,
 * beside its answer: an MCP server's progress, log messages and requests
 * (sampling, elicitation), and its result as it came, content items and all.
 * The caller is an MCP client of toolgate's own endpoint (SPEC section 16);
 * a call with no relay (the batch route) has no one to pass them to.
 *
 * Relays are found by run and call id, so a call that runs later, in
 * another request of the same process (a held call, run once approved),
 * still reaches its caller.
 */
import type { ToolCallResult } from './executor.js'

/** An MCP progress notification's parameters, less the token (the caller has its own). */
export interface ProgressUpdate { progress: number, total?: number | undefined, message?: string | undefined }

/** An MCP log message's parameters (`notifications/message`). */
export interface LogMessage { level: string, logger?: string | undefined, data: unknown }

/** The caller of one call, as its executor can reach it. */
export interface CallRelay {
  progress (update: ProgressUpdate): void
  log (message: LogMessage): void
  /** The executor's result as it came, before toolgate gave it a meaning. */
  result (result: ToolCallResult): void
  /**
   * A request of the server to the caller (`sampling/createMessage`,
   * `elicitation/create`): answers the caller's result, or rejects when the
   * caller cannot answer it (it did not declare the capability).
   */
  request (method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>>
}

/** The relays of the calls running in this process that have a caller to relay to. */
export class CallRelays {
  readonly #relays = new Map<string, CallRelay>()

  /** Makes `relay` the caller of that call until the answer's `release()`. */
  register (runId: string, callId: string, relay: CallRelay): { release: () => void } {
    const key = `${runId}\u0000${callId}`
    this.#relays.set(key, relay)
    return { release: () => { if (this.#relays.get(key) === relay) this.#relays.delete(key) } }
  }

  get (runId: string, callId: string): CallRelay | undefined {
    return this.#relays.size === 0 ? undefined : this.#relays.get(`${runId}\u0000${callId}`)
  }
}
