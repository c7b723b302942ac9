import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { type RedisConnection, lost } from './redis-connection.js'

/** What a channel's subscriber is told: each message of another client, and each time it subscribed again after losing Redis. */
export interface ChannelHandlers<M> {
  message: (message: M) => void
  /** The subscription was lost and is back: messages published meanwhile were missed. */
  resubscribed?: () => void
}

/**
 * One pub/sub channel of a Redis store, `P <name>` (the cancel bus, the
 * pins' notices): published on the shared connection, heard on a
 * subscription of its own made by the first `listen`. Each message carries
 * this client's origin, and one that comes back to the client that
 * published it is skipped: the publisher tells its own listeners at once.
 */
export class RedisChannel<M extends object> {
  readonly #conn: RedisConnection
  readonly #name: string
  readonly #accept: (message: unknown) => message is M
  readonly #origin = randomUUID()
  #sub: Redis | null = null
  #subscribed: Promise<void> = Promise.resolve()

  /** `accept` tells this channel's messages from anything else another program publishes on it. */
  constructor (conn: RedisConnection, name: string, accept: (message: unknown) => message is M) {
    this.#conn = conn
    this.#name = name
    this.#accept = accept
  }

  async publish (message: M): Promise<void> {
    const text = JSON.stringify({ ...message, origin: this.#origin })
    await this.#conn.call(() => this.#conn.redis.publish(this.#conn.key(this.#name), text))
  }

  /** Subscribes, the first time (later calls, and calls once the connection is closed, do nothing). */
  listen (handlers: ChannelHandlers<M>): void {
    if (this.#sub !== null || this.#conn.closed) return
    // The subscription is no write: it may be queued until Redis is reached, and is made again on every reconnection.
    const sub = this.#conn.redis.duplicate({ enableOfflineQueue: true, autoResendUnfulfilledCommands: true })
    this.#sub = sub
    this.#conn.watch(sub, `${this.#name} subscription`)
    const channel = this.#conn.key(this.#name)
    sub.on('message', (ch: string, text: string) => {
      if (ch !== channel) return
      let message: unknown
      try {
        message = JSON.parse(text)
      } catch {
        // Not one of ours (another program on the channel): nothing to do.
        return
      }
      if (!this.#accept(message) || (message as { origin?: unknown }).origin === this.#origin) return
      handlers.message(message)
    })
    let connections = 0
    sub.on('ready', () => {
      if (++connections > 1) handlers.resubscribed?.()
    })
    this.#subscribed = sub.subscribe(channel).then(() => {}, (err: Error) => {
      // ioredis subscribes again on every reconnection.
      this.#conn.logger?.warn({ err: { message: err.message } }, `Redis store: ${this.#name} subscription failed; retrying on reconnection`)
    })
  }

  /** Settles once the first subscription reached Redis (or failed; it is retried on reconnection). */
  whenSubscribed (): Promise<void> { return this.#subscribed }

  /** False while a subscription exists and has lost its connection. */
  connected (): boolean {
    return this.#sub === null || !lost(this.#sub)
  }

  /** Answers the subscription's client for the connection to close. */
  close (): Redis | null {
    return this.#sub
  }
}
