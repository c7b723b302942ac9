import type { Logger } from 'pino'
import { Listeners } from './listeners.js'
import { RedisChannel } from './redis-channel.js'
import { RedisConnection, parseStoreUrl } from './redis-connection.js'
import { script } from './redis-scripts.js'
import type { PinChange, PinListener, ToolPin, ToolPins } from './tool-pins.js'

interface PinNotice { server: string, change: PinChange }

/**
 * Pins the server's tools when it has none yet, atomically: KEYS[1] the
 * server's pins hash; ARGV name, pin JSON pairs. Answers the hash after.
 */
const PIN_FIRST = script('pinFirst', `
if redis.call('EXISTS', KEYS[1]) == 0 and #ARGV > 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
`)

/**
 * The pins of MCP servers' tools in Redis, shared by every replica on the
 * same store: `P pins:<server>` a hash, the server's tool name → pin JSON.
 * Pins do not expire: they are the record of what an admin trusted.
 * Replicas' announcements go over pub/sub on `P pins-changed` (a
 * RedisChannel), subscribed with the first listener.
 */
export class RedisToolPins implements ToolPins {
  readonly #conn: RedisConnection
  readonly #channel: RedisChannel<PinNotice>
  readonly #listeners = new Listeners<Parameters<PinListener>>()

  constructor (opts: { url: string, prefix?: string, logger?: Pick<Logger, 'warn' | 'info'> }) {
    const url = parseStoreUrl(opts.url)
    this.#conn = new RedisConnection({ connection: url.connection, prefix: opts.prefix ?? url.prefix, logger: opts.logger })
    this.#channel = new RedisChannel(this.#conn, 'pins-changed', isPinNotice)
  }

  async pinsOf (server: string): Promise<Map<string, ToolPin>> {
    return pinsFrom(await this.#conn.call(() => this.#conn.redis.hgetall(this.#conn.key('pins', server))))
  }

  async pinFirst (server: string, first: ReadonlyMap<string, ToolPin>): Promise<Map<string, ToolPin>> {
    const args: string[] = []
    for (const [name, pin] of first) args.push(name, JSON.stringify(pin))
    const flat = await this.#conn.eval(PIN_FIRST, [this.#conn.key('pins', server)], args) as string[]
    const pairs: Record<string, string> = {}
    for (let i = 0; i + 1 < flat.length; i += 2) pairs[flat[i]!] = flat[i + 1]!
    return pinsFrom(pairs)
  }

  async approve (server: string, pins: ReadonlyMap<string, ToolPin>): Promise<void> {
    if (pins.size === 0) return
    const args: string[] = []
    for (const [name, pin] of pins) args.push(name, JSON.stringify(pin))
    await this.#conn.call(() => this.#conn.redis.hset(this.#conn.key('pins', server), ...args))
  }

  async announce (server: string, change: PinChange, from?: PinListener): Promise<void> {
    this.#listeners.deliverExcept(from, server, change)
    await this.#channel.publish({ server, change })
  }

  onChange (listener: PinListener): () => void {
    const remove = this.#listeners.add(listener)
    this.#channel.listen({
      message: ({ server, change }) => { this.#listeners.deliver(server, change) },
      resubscribed: () => { this.#listeners.deliver(null, 'approved') }
    })
    return remove
  }

  /** Settles once the first subscription of `onChange` reached Redis (or failed; it is retried on reconnection). */
  whenSubscribed (): Promise<void> { return this.#channel.whenSubscribed() }

  async close (): Promise<void> {
    this.#listeners.clear()
    await this.#conn.close([this.#channel.close()])
  }
}

function isPinNotice (message: unknown): message is PinNotice {
  const m = message as Partial<PinNotice> | null
  return typeof m === 'object' && m !== null && typeof m.server === 'string' && (m.change === 'approved' || m.change === 'quarantined')
}

function pinsFrom (hash: Record<string, string>): Map<string, ToolPin> {
  const pins = new Map<string, ToolPin>()
  for (const [name, json] of Object.entries(hash)) pins.set(name, JSON.parse(json) as ToolPin)
  return pins
}
