import type { ServerResponse } from 'node:http'

/** How long a client waits before reconnecting, sent once as `retry:` (ms). */
export const SSE_RETRY_MS = 3000

export interface SseOptions {
  /** Seconds between comment heartbeats while no event is sent; 0 turns them off. */
  heartbeatSeconds: number
  /** Headers besides the stream's own (the request id, rate-limit headers). */
  headers: Record<string, unknown>
}

/**
 * One server-sent-events response. The status line goes out with the first
 * event; each event gets an `id:` (its position in the stream) so a client
 * can tell what it has seen; a `: heartbeat` comment goes out whenever the
 * stream has been quiet for the heartbeat period, so idle proxies (commonly a
 * 60 s timeout) do not cut a long batch whose calls are still running.
 */
export class SseStream {
  readonly #raw: ServerResponse
  readonly #opts: SseOptions
  #open = false
  #nextId = 0
  #timer: NodeJS.Timeout | null = null

  constructor (raw: ServerResponse, opts: SseOptions) {
    this.#raw = raw
    this.#opts = opts
  }

  /** Whether the status line has been sent. */
  get open (): boolean {
    return this.#open
  }

  /** Sends one event whose data is JSON text already. */
  send (type: string, json: string): void {
    const raw = this.#raw
    if (!this.#open) this.#start()
    if (!raw.destroyed) raw.write(`id: ${this.#nextId++}\nevent: ${type}\ndata: ${json}\n\n`)
    this.#timer?.refresh()
  }

  /** Ends the response and stops the heartbeat. */
  end (): void {
    this.#stopHeartbeat()
    this.#raw.end()
  }

  #start (): void {
    this.#open = true
    const headers: Record<string, unknown> = { ...this.#opts.headers }
    // A stream's own headers win over whatever was set on the reply.
    delete headers['content-length']
    Object.assign(headers, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' })
    this.#raw.writeHead(200, headers as Record<string, string>)
    this.#raw.write(`retry: ${SSE_RETRY_MS}\n\n`)
    if (this.#opts.heartbeatSeconds > 0) {
      this.#timer = setInterval(() => {
        if (this.#raw.destroyed || this.#raw.writableEnded) this.#stopHeartbeat()
        else this.#raw.write(': heartbeat\n\n')
      }, this.#opts.heartbeatSeconds * 1000)
      this.#timer.unref()
    }
    this.#raw.once('close', () => { this.#stopHeartbeat() })
  }

  #stopHeartbeat (): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }
}
