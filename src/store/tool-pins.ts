import { Listeners } from './listeners.js'

/**
 * The pinned definitions of MCP servers' tools (SPEC §18), shared by
 * replicas: one set of pins per server, by the server's own tool name. A
 * pin is the SHA-256 of a tool's definition in RFC 8785 form, with the
 * definition itself (so that a changed tool's differences can be shown).
 * Replicas tell each other when a server's tools change (`announce`), so
 * that each brings its quarantine in line at once, not at its next listing.
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

/**
 * What one replica tells the others about a server's tools: `approved`, an
 * admin approved some (read the server's pins again); `quarantined`, a
 * listing of the server held a tool back (list the server again).
 */
export type PinChange = 'approved' | 'quarantined'

/** Hears a change of a server's tools; `server` is null when notices may have been missed: every server's pins are to be read again. */
export type PinListener = (server: string | null, change: PinChange) => void

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
  /**
   * Tells every listener sharing these pins but `from` (the teller's own):
   * this process's at once, other replicas' soon after and at most once. A
   * replica cut off from the store at that moment misses it, and is told
   * `null` when it is back.
   */
  announce (server: string, change: PinChange, from?: PinListener): Promise<void>
  /** Listens to every replica's announcements; answers the unsubscribe function. */
  onChange (listener: PinListener): () => void
  close (): Promise<void>
}

/** The pins of one process (the memory store): its listeners are every replica there is. */
export class MemoryToolPins implements ToolPins {
  readonly #pins = new Map<string, Map<string, ToolPin>>()
  readonly #listeners = new Listeners<Parameters<PinListener>>()

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

  async announce (server: string, change: PinChange, from?: PinListener): Promise<void> {
    this.#listeners.deliverExcept(from, server, change)
  }

  onChange (listener: PinListener): () => void {
    return this.#listeners.add(listener)
  }

  async close (): Promise<void> {
    this.#listeners.clear()
  }
}
