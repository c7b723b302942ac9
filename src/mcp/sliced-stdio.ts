/**
 * The SDK's stdio client transport, with its messages parsed in slices
 * (SPEC §19): the SDK joins a server's output into lines and parses each
 * with one JSON.parse, so a tools/list line of 20,000 tools held the event
 * loop for hundreds of milliseconds. Here lines are cut without copying the
 * buffer again for every chunk, a line longer than WHOLE_LINE is parsed in
 * slices (sliced-json.ts), and messages still reach the client in the order
 * the server wrote them. A line longer than `maxLineBytes` ends the
 * connection, as the SDK's own buffer limit does, with `overflow` saying why.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import { StdioClientTransport, type StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js'
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js'
import { parseJsonInSlices } from './sliced-json.js'

/** A line at most this long is parsed by one JSON.parse (well under a millisecond's work). */
const WHOLE_LINE = 256 * 1024
/** A long line is parsed in slices of about this long. */
const PARSE_SLICE_MS = 10

/** What the SDK's transport reads its output with; replaced here (checked at construction). */
interface Internals {
  _readBuffer: { append: (chunk: Buffer) => void, clear: () => void }
  processReadBuffer: () => void
}

export class SlicedStdioClientTransport extends StdioClientTransport {
  readonly #lines: LineBuffer
  readonly #queue: string[] = []
  #pumping = false
  #closed = false

  constructor (params: StdioServerParameters, maxLineBytes: number) {
    super(params)
    const sdk = this as unknown as Internals
    // The SDK's stdout handler calls these two: a version that reads its output otherwise would parse whole again.
    if (typeof sdk.processReadBuffer !== 'function' || typeof sdk._readBuffer?.append !== 'function') {
      throw new TypeError('Expected the MCP SDK\'s StdioClientTransport to read its output through _readBuffer and processReadBuffer')
    }
    this.#lines = new LineBuffer(maxLineBytes)
    sdk._readBuffer = this.#lines
    sdk.processReadBuffer = () => { this.#drain() }
  }

  /** Why the connection was ended by toolgate (a line over the limit), or null. */
  get overflow (): string | null {
    return this.#lines.overflow
  }

  override async close (): Promise<void> {
    this.#closed = true
    this.#queue.length = 0
    await super.close()
  }

  #drain (): void {
    for (const line of this.#lines.take()) this.#queue.push(line)
    if (!this.#pumping) void this.#pump()
  }

  /** Delivers the queued lines in order; short ones at once (the SDK's own behaviour), a long one after its sliced parse. */
  async #pump (): Promise<void> {
    this.#pumping = true
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        const line = this.#queue.shift()!
        try {
          const value = line.length <= WHOLE_LINE ? JSON.parse(line) as unknown : await parseJsonInSlices(line, async () => { await nextTurn() }, PARSE_SLICE_MS)
          if (this.#closed) return
          this.onmessage?.(JSONRPCMessageSchema.parse(value))
        } catch (err) {
          this.onerror?.(err as Error)
        }
      }
    } finally {
      this.#pumping = false
    }
  }
}

/** A server's output cut into lines: each chunk is searched once, and a line is joined once. */
class LineBuffer {
  readonly #max: number
  #partial: Buffer[] = []
  #partialBytes = 0
  #complete: string[] = []
  overflow: string | null = null

  constructor (max: number) {
    this.#max = max
  }

  append (chunk: Buffer): void {
    let start = 0
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      this.#partial.push(chunk.subarray(start, nl))
      const line = Buffer.concat(this.#partial).toString('utf8')
      this.#complete.push(line.endsWith('\r') ? line.slice(0, -1) : line)
      this.#partial = []
      this.#partialBytes = 0
      start = nl + 1
    }
    if (start === chunk.length) return
    this.#partialBytes += chunk.length - start
    if (this.#partialBytes > this.#max) {
      this.clear()
      this.overflow = `the server wrote a message longer than ${this.#max} bytes`
      // The SDK's handler closes the connection on this error.
      throw new Error(this.overflow)
    }
    this.#partial.push(chunk.subarray(start))
  }

  /** The complete lines read since the last call. */
  take (): string[] {
    const lines = this.#complete
    this.#complete = []
    return lines
  }

  clear (): void {
    this.#partial = []
    this.#partialBytes = 0
    this.#complete = []
  }
}
