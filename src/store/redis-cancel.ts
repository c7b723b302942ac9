import type { Redis } from 'ioredis'
import { CancelListeners, type CancelBus } from './cancel-bus.js'
import type { CancelListener, CancelReason } from './records.js'
import { RedisChannel } from './redis-channel.js'
import type { RedisConnection } from './redis-connection.js'

interface CancelMessage { runId: string, reason: CancelReason }

/**
 * The cancel bus over Redis pub/sub on `P cancel` (a RedisChannel),
 * subscribed with the first listener. A cancel this process published is
 * delivered here at once and skipped when it comes back.
 */
export class RedisCancelBus implements CancelBus {
  readonly #channel: RedisChannel<CancelMessage>
  readonly #listeners = new CancelListeners()

  constructor (conn: RedisConnection) {
    this.#channel = new RedisChannel(conn, 'cancel', isCancelMessage)
  }

  async publishCancel (runId: string, reason: CancelReason): Promise<void> {
    this.#listeners.deliver(runId, reason)
    await this.#channel.publish({ runId, reason })
  }

  onCancel (listener: CancelListener): () => void {
    const remove = this.#listeners.add(listener)
    this.#channel.listen({ message: ({ runId, reason }) => { this.#listeners.deliver(runId, reason) } })
    return remove
  }

  /** Settles once the first subscription of `onCancel` reached Redis (or failed; it is retried on reconnection). */
  whenSubscribed (): Promise<void> { return this.#channel.whenSubscribed() }

  /** False while a subscription exists and has lost its connection. */
  connected (): boolean { return this.#channel.connected() }

  /** Forgets the listeners; answers the subscription's client for the connection to close. */
  close (): Redis | null {
    this.#listeners.clear()
    return this.#channel.close()
  }
}

function isCancelMessage (message: unknown): message is CancelMessage {
  return typeof message === 'object' && message !== null && typeof (message as { runId?: unknown }).runId === 'string'
}
