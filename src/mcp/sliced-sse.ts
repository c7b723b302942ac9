/**
 * A request's answer sent as an SSE stream (Streamable HTTP lets a server
 * answer a POST so), read until the response to that request, each event's
 * data parsed in slices (SPEC §19): the SDK parses every event with one
 * JSON.parse, and a tools/list of 20,000 tools in one event held the event
 * loop for hundreds of milliseconds. The stream is cut into lines once
 * (each chunk searched once, a line joined once), as the SSE format says:
 * `data` lines joined by newlines make an event of type `message` unless
 * `event` names another. A stream that ends before the response (a server
 * that closes it to be resumed, SEP-1699) is handed back to the SDK as the
 * SSE text of what it held, ids and `retry` included, so that the SDK
 * resumes it as it would have.
 */

/** Parses one event's data as JSON (in slices). */
export type ParseJson = (text: string) => Promise<unknown>

/**
 * The messages of the stream up to and including the response whose id is
 * `requestId` (notifications and requests the server sent before it come
 * first, in order), the rest of the stream not read; or, when the stream
 * ends before that response, `sse`: the stream's events again as SSE text.
 * Rejects when the stream fails (a bound, a lost connection) or an event is
 * not JSON.
 */
export async function readSseAnswer (body: ReadableStream<Uint8Array>, requestId: unknown, parse: ParseJson): Promise<{ messages: unknown[] } | { sse: string }> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader()
  const lines = new SseLines()
  const messages: unknown[] = []
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      for (const data of lines.feed(value)) {
        const message = await parse(data)
        messages.push(message)
        if (isResponseTo(message, requestId)) return { messages }
      }
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
  return { sse: lines.replay() }
}

function isResponseTo (message: unknown, id: unknown): boolean {
  if (typeof message !== 'object' || message === null) return false
  const m = message as Record<string, unknown>
  return m.id === id && ('result' in m || 'error' in m)
}

/** The SSE format's line and event state: `feed` answers the data of each `message` event that a chunk completes. */
class SseLines {
  /** Pieces of the line not ended yet: joined once, when it ends. */
  #partial: string[] = []
  /** The previous chunk ended with CR: an LF starting this one ends nothing more. */
  #afterCr = false
  #data: string[] = []
  #event = ''
  #id: string | null = null
  #retry: string | null = null
  /** The SSE text of the events read, as replay() answers it. */
  #seen: string[] = []

  feed (text: string): string[] {
    const events: string[] = []
    let start = 0
    if (this.#afterCr && text.startsWith('\n')) start = 1
    this.#afterCr = false
    const ends = /\r\n|\r|\n/g
    ends.lastIndex = start
    for (let m = ends.exec(text); m !== null; m = ends.exec(text)) {
      this.#partial.push(text.slice(start, m.index))
      const line = this.#partial.join('')
      this.#partial = []
      start = m.index + m[0].length
      if (m[0] === '\r' && start === text.length) this.#afterCr = true
      const data = this.#line(line)
      if (data !== null) events.push(data)
    }
    if (start < text.length) this.#partial.push(text.slice(start))
    return events
  }

  /** One line: the data of the event it ends (a blank line), or null. */
  #line (line: string): string | null {
    if (line === '') {
      const data = this.#data.join('\n')
      const isMessage = this.#event === '' || this.#event === 'message'
      if (isMessage) this.#seen.push(`${this.#id === null ? '' : `id: ${this.#id}\n`}data: ${data.replaceAll('\n', '\ndata: ')}\n\n`)
      this.#data = []
      this.#event = ''
      this.#id = null
      // As the SDK does: an event without data (a priming event, a keep-alive) is skipped.
      return data !== '' && isMessage ? data : null
    }
    if (line.startsWith(':')) return null
    const colon = line.indexOf(':')
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'data') this.#data.push(value)
    else if (field === 'event') this.#event = value
    else if (field === 'id') this.#id = value
    else if (field === 'retry') this.#retry = value
    return null
  }

  /** The message events read so far as SSE text, each with its id, the server's `retry` first. */
  replay (): string {
    return (this.#retry === null ? '' : `retry: ${this.#retry}\n\n`) + this.#seen.join('')
  }
}
