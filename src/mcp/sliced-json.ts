/**
 * JSON text parsed in slices that let other work run between them (SPEC
 * §19): one JSON.parse of a server's 3 MB tools/list page holds the event
 * loop for hundreds of milliseconds on a slow machine. The text is walked
 * container by container; any value whose text is at most SMALL characters
 * is parsed whole by JSON.parse (native speed), a larger container is
 * entered and built member by member. Every SLICE_MS of work the parse
 * waits for `pause`. The answer is what JSON.parse would answer, and text
 * JSON.parse refuses is refused with a SyntaxError.
 */

/** A value whose text is at most this long is parsed by one JSON.parse (well under a millisecond's work). */
const SMALL = 16 * 1024
/** Text at most this long is parsed by one JSON.parse without slicing. */
const WHOLE = 256 * 1024

interface Frame { value: Record<string, unknown> | unknown[], key: string | null, count: number }

/** Parses `text` as JSON, waiting for `pause` whenever a slice of the work has taken `sliceMs`. */
export async function parseJsonInSlices (text: string, pause: () => Promise<void>, sliceMs: number): Promise<unknown> {
  if (text.length <= WHOLE) return JSON.parse(text)
  const p = new SlicedParser(text)
  let sliceStart = performance.now()
  p.begin()
  while (!p.done) {
    p.step()
    if (performance.now() - sliceStart > sliceMs) {
      await pause()
      sliceStart = performance.now()
    }
  }
  return p.end()
}

/** Character codes of JSON's structure. */
const Char = { Quote: 34, Comma: 44, Colon: 58, OpenBracket: 91, Backslash: 92, CloseBracket: 93, OpenBrace: 123, CloseBrace: 125 } as const

class SlicedParser {
  readonly #text: string
  readonly #stack: Frame[] = []
  #at = 0
  #root: unknown

  constructor (text: string) {
    this.#text = text
  }

  get done (): boolean {
    return this.#stack.length === 0
  }

  begin (): void {
    this.#space()
    this.#value()
  }

  end (): unknown {
    this.#space()
    if (this.#at !== this.#text.length) this.#fail()
    return this.#root
  }

  /** One member of the innermost open container, or its end. */
  step (): void {
    const top = this.#stack.at(-1)!
    this.#space()
    const c = this.#text.charCodeAt(this.#at)
    const isArray = Array.isArray(top.value)
    if (c === (isArray ? Char.CloseBracket : Char.CloseBrace)) {
      this.#at++
      this.#stack.pop()
      this.#attach(top.value)
      return
    }
    if (top.count > 0) {
      if (c !== Char.Comma) this.#fail()
      this.#at++
      this.#space()
    }
    if (!isArray) {
      if (this.#text.charCodeAt(this.#at) !== Char.Quote) this.#fail()
      const end = this.#stringEnd(this.#at)
      top.key = JSON.parse(this.#text.slice(this.#at, end)) as string
      this.#at = end
      this.#space()
      if (this.#text.charCodeAt(this.#at) !== Char.Colon) this.#fail()
      this.#at++
      this.#space()
    }
    this.#value()
  }

  /** The value at the cursor: parsed whole when small, else its container opened. */
  #value (): void {
    const text = this.#text
    const start = this.#at
    const c = text.charCodeAt(start)
    let end: number
    if (c === Char.OpenBrace || c === Char.OpenBracket) {
      end = this.#containerEnd(start)
      if (end < 0) {
        this.#stack.push({ value: c === Char.OpenBrace ? {} : [], key: null, count: 0 })
        this.#at = start + 1
        return
      }
    } else if (c === Char.Quote) {
      end = this.#stringEnd(start)
    } else {
      end = start
      while (end < text.length && !isDelimiter(text.charCodeAt(end))) end++
      if (end === start) this.#fail()
    }
    this.#attach(JSON.parse(text.slice(start, end)))
    this.#at = end
  }

  #attach (value: unknown): void {
    const top = this.#stack.at(-1)
    if (top === undefined) {
      this.#root = value
      return
    }
    top.count++
    if (Array.isArray(top.value)) top.value.push(value)
    // As JSON.parse does: an own property, whatever the key (`__proto__` included).
    else Object.defineProperty(top.value, top.key!, { value, writable: true, enumerable: true, configurable: true })
  }

  /** The end of the container at `start` when its text is at most SMALL characters, else -1. */
  #containerEnd (start: number): number {
    const text = this.#text
    const stop = Math.min(text.length, start + SMALL)
    let depth = 0
    let i = start
    while (i < stop) {
      const c = text.charCodeAt(i)
      if (c === Char.Quote) {
        i = this.#stringEnd(i)
        continue
      }
      if (c === Char.OpenBrace || c === Char.OpenBracket) depth++
      else if ((c === Char.CloseBrace || c === Char.CloseBracket) && --depth === 0) return i + 1
      i++
    }
    return -1
  }

  /** The end (past its closing quote) of the string at `start`. */
  #stringEnd (start: number): number {
    const text = this.#text
    let from = start + 1
    for (;;) {
      const quote = text.indexOf('"', from)
      if (quote < 0) this.#fail()
      let backslashes = 0
      while (text.charCodeAt(quote - 1 - backslashes) === Char.Backslash) backslashes++
      if (backslashes % 2 === 0) return quote + 1
      from = quote + 1
    }
  }

  #space (): void {
    const text = this.#text
    while (this.#at < text.length && isSpace(text.charCodeAt(this.#at))) this.#at++
  }

  #fail (): never {
    throw new SyntaxError(`Unexpected JSON at position ${this.#at}`)
  }
}

function isSpace (c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13
}

function isDelimiter (c: number): boolean {
  return isSpace(c) || c === Char.Comma || c === Char.CloseBrace || c === Char.CloseBracket || c === Char.Colon
}
