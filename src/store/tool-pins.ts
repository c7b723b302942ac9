import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { RedisToolPins } from './redis-tool-pins.js'

/**
 * The pinned definitions of MCP servers' tools (SPEC §18), shared by
 * replicas: one set of pins per server, by the server's own tool name. A
 * pin is the SHA-256 of a tool's definition in RFC 8785 form, with the
 * definition itself (so that a changed tool's differences can be shown).
 */

/** One tool's pinned definition. */
export interface ToolPin {
  /** SHA-256 (hex) over the RFC 8785 form of `definition`. */
  hash: string
  /** What was pinned: name, title, description, inputSchema, outputSchema, annotations. */
  definition: Record<string, unknown>
  /** When it was pinned (epoch ms). */
  pinnedAt: number
}

export interface ToolPins {
  /** The server's pins by its own tool names (empty when it has none). */
  pinsOf (server: string): Promise<Map<string, ToolPin>>
  /**
   * Pins `first` as the server's pins when the server has none yet, in one
   * atomic step (two replicas importing at once pin one set); answers the
   * pins in place afterwards, whoever wrote them.
   */
  pinFirst (server: string, first: ReadonlyMap<string, ToolPin>): Promise<Map<string, ToolPin>>
  /** Pins these definitions (an admin approved them), over any earlier pin of the same tools. */
  approve (server: string, pins: ReadonlyMap<string, ToolPin>): Promise<void>
  close (): Promise<void>
}

/** The pins of one process (the memory store). */
export class MemoryToolPins implements ToolPins {
  readonly #pins = new Map<string, Map<string, ToolPin>>()

  async pinsOf (server: string): Promise<Map<string, ToolPin>> {
    return new Map(this.#pins.get(server))
  }

  async pinFirst (server: string, first: ReadonlyMap<string, ToolPin>): Promise<Map<string, ToolPin>> {
    const held = this.#pins.get(server)
    if (held === undefined || held.size === 0) {
      if (first.size > 0) this.#pins.set(server, new Map(first))
      return new Map(first)
    }
    return new Map(held)
  }

  async approve (server: string, pins: ReadonlyMap<string, ToolPin>): Promise<void> {
    const held = this.#pins.get(server) ?? new Map<string, ToolPin>()
    for (const [name, pin] of pins) held.set(name, pin)
    this.#pins.set(server, held)
  }

  async close (): Promise<void> {}
}

/** The pins of the store `TOOLGATE_STORE` names: this process's memory, or the shared Redis. */
export function createToolPins (config: Pick<Config, 'store'>, logger?: Pick<Logger, 'warn' | 'info'>): ToolPins {
  if (config.store === 'memory') return new MemoryToolPins()
  return new RedisToolPins({ url: config.store, ...(logger === undefined ? {} : { logger }) })
}
