import type { Logger } from 'pino'
import { RedisConnection, parseStoreUrl } from './redis-connection.js'
import { script } from './redis-scripts.js'
import type { ToolPin, ToolPins } from './tool-pins.js'

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
 */
export class RedisToolPins implements ToolPins {
  readonly #conn: RedisConnection

  constructor (opts: { url: string, prefix?: string, logger?: Pick<Logger, 'warn' | 'info'> }) {
    const url = parseStoreUrl(opts.url)
    this.#conn = new RedisConnection({ connection: url.connection, prefix: opts.prefix ?? url.prefix, logger: opts.logger })
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

  async close (): Promise<void> {
    await this.#conn.close()
  }
}

function pinsFrom (hash: Record<string, string>): Map<string, ToolPin> {
  const pins = new Map<string, ToolPin>()
  for (const [name, json] of Object.entries(hash)) pins.set(name, JSON.parse(json) as ToolPin)
  return pins
}
