import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { CancelListeners, type CancelBus } from './cancel-bus.js'
import type { CancelListener, CancelReason } from './records.js'
import { type RedisConnection, lost } from './redis-connection.js'

interface CancelMessage { runId: string, reason: CancelReason, origin: string }

/**
 * The cancel bus over Redis pub/sub on `P cancel`: published on the shared
 * connection, heard on a subscription of its own made with the first
 * listener. A message this process published is delivered here at once and
 * skipped when it comes back.
 */
export class RedisCancelBus implements CancelBus {
  readonly #conn: RedisConnection
  readonly #origin = randomUUID()
  readonly #listeners = new CancelListeners()
  #sub: Redis | null = null
  #subscribed: Promise<void> = Promise.resolve()

  constructor (conn: RedisConnection) {
    this.#conn = conn
  }

  async publishCancel (runId: string, reason: CancelReason): Promise<void> {
    this.#listeners.deliver(runId, reason)
    const message: CancelMessage = { runId, reason, origin: this.#origin }
    await this.#conn.call(() => this.#conn.redis.publish(this.#conn.key('cancel'), JSON.stringify(message)))
  }

  onCancel (listener: CancelListener): () => void {
    const remove = this.#listeners.add(listener)
    if (this.#sub === null && !this.#conn.closed) this.#subscribe()
    return remove
  }

  /** Settles once the first subscription of `onCancel` reached Redis (or failed; it is retried on reconnection). */
  whenSubscribed (): Promise<void> { return this.#subscribed }

  /** False while a subscription exists and has lost its connection. */
  connected (): boolean {
    return this.#sub === null || !lost(this.#sub)
  }

  /** Forgets the listeners; answers the subscription's client for the connection to close. */
  close (): Redis | null {
    this.#listeners.clear()
    return this.#sub
  }

  #subscribe (): void {
    // The subscription is no write: it may be queued until Redis is reached, and is made again on every reconnection.
    const sub = this.#conn.redis.duplicate({ enableOfflineQueue: true, autoResendUnfulfilledCommands: true })
    this.#sub = sub
    this.#conn.watch(sub, 'cancel subscription')
    const channel = this.#conn.key('cancel')
    sub.on('message', (ch: string, text: string) => {
      if (ch !== channel) return
      let message: CancelMessage
      try {
        message = JSON.parse(text) as CancelMessage
      } catch {
        // Not one of ours (another program on the channel): nothing to cancel.
        return
      }
      if (message.origin !== this.#origin) this.#listeners.deliver(message.runId, message.reason)
    })
    this.#subscribed = sub.subscribe(channel).then(() => {}, (err: Error) => {
      // ioredis subscribes again on every reconnection.
      this.#conn.logger?.warn({ err: { message: err.message } }, 'Redis store: cancel subscription failed; retrying on reconnection')
    })
  }
}
