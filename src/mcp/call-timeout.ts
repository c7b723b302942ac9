import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Clock, TimerHandle } from '../clock.js'

/**
 * The timeout of one `tools/call` (SPEC section 18), on toolgate's clock:
 * `idleMs`, restarted by each progress report of the server, and `totalMs`
 * in all. While a question of the server's about the call waits for its
 * answer, neither runs: that wait is toolgate's (a person, the MCP client),
 * not the server's. Once the question is answered the idle time restarts in
 * full, as after progress, and the total goes on with what it had left.
 *
 * When either runs out, `expire` gets the SDK's own timeout error: a request
 * aborted with it is cancelled (`notifications/cancelled`) and classified a
 * timeout (classify.ts).
 */
export class CallTimeout {
  readonly #clock: Clock
  readonly #idleMs: number
  readonly #totalMs: number
  readonly #expire: (reason: McpError) => void
  /** The total time left when the clock last started. */
  #left: number
  #startedAt = 0
  #idle: TimerHandle | null = null
  #total: TimerHandle | null = null
  /** Questions waiting: the clock runs only when there are none. */
  #pauses = 0
  #stopped = false

  constructor (clock: Clock, idleMs: number, totalMs: number, expire: (reason: McpError) => void) {
    this.#clock = clock
    this.#idleMs = idleMs
    this.#totalMs = totalMs
    this.#left = totalMs
    this.#expire = expire
    this.#start()
  }

  /** The server reported progress: the idle time restarts, unless a question holds the clock. */
  progress (): void {
    if (this.#stopped || this.#pauses > 0) return
    this.#clock.clearTimeout(this.#idle)
    this.#idle = this.#clock.setTimeout(() => { this.#fire(this.#idleMs) }, this.#idleMs)
  }

  /** Holds the clock until the function it answers is called (once each; holds nest). */
  pause (): () => void {
    if (this.#stopped) return () => {}
    if (this.#pauses++ === 0) {
      this.#left -= this.#clock.now() - this.#startedAt
      this.#clear()
    }
    let resumed = false
    return () => {
      if (resumed) return
      resumed = true
      if (--this.#pauses === 0 && !this.#stopped) this.#start()
    }
  }

  /** The call ended: nothing fires any more. */
  stop (): void {
    this.#stopped = true
    this.#clear()
  }

  #start (): void {
    this.#startedAt = this.#clock.now()
    this.#total = this.#clock.setTimeout(() => { this.#fire(this.#totalMs) }, Math.max(0, this.#left))
    this.progress()
  }

  #fire (timeout: number): void {
    this.stop()
    this.#expire(McpError.fromError(ErrorCode.RequestTimeout, 'Request timed out', { timeout }))
  }

  #clear (): void {
    this.#clock.clearTimeout(this.#idle)
    this.#clock.clearTimeout(this.#total)
    this.#idle = null
    this.#total = null
  }
}
