/**
 * The fetch toolgate's MCP client sends its Streamable HTTP requests with.
 *
 * The SDK's client transport takes a `fetch`. Node's own is undici's fetch
 * layer over the same connection pool toolgate uses elsewhere, and for each
 * request it turns the string body into a web stream that the pool then
 * writes as an async iterable (two socket writes, each its own turn), and
 * the answer into another web stream, with the bookkeeping of the Fetch
 * standard around both: on the one-call path of toolgate's `/mcp` it was
 * the largest single cost of toolgate's own process (about 250 µs of CPU of
 * a call's 1.2 ms, measured in docs/performance.md).
 *
 * `leanFetch` sends what the SDK sends (a string body, or none, with its
 * redirects not followed) with undici's `request`, which writes head and
 * body in one go, and answers a `Response` whose body is read from undici's
 * stream directly when the SDK asks for its text or JSON; a web stream is
 * made only when the body itself is asked for (an SSE answer, the GET stream
 * of notifications). It behaves as fetch does where the SDK and toolgate
 * can tell: a failure to connect or send rejects with fetch's `TypeError`
 * carrying the cause (classify.ts reads its code), an abort with the
 * signal's reason, a redirect under `redirect: 'error'` with a `TypeError`,
 * a gzip, deflate or brotli answer is decoded. Anything else (a stream or
 * form body, a redirect to follow) goes to `fallback`.
 */
import type { Readable } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { request } from 'undici'

export function leanFetch (fallback: FetchLike): FetchLike {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : null
    const body = init?.body
    const redirect = init?.redirect
    if (url === null || !/^https?:/i.test(url) || (body != null && typeof body !== 'string') || (redirect !== 'manual' && redirect !== 'error')) {
      return await fallback(input, init)
    }
    const signal = init?.signal ?? undefined
    let answer: Awaited<ReturnType<typeof request>>
    try {
      answer = await request(url, {
        method: (init?.method ?? 'GET').toUpperCase() as 'GET',
        headers: requestHeaders(init?.headers, typeof body === 'string'),
        body: body ?? null,
        ...(signal === undefined ? {} : { signal })
      })
    } catch (err) {
      if (signal?.aborted === true) throw signal.reason
      throw new TypeError('fetch failed', { cause: err })
    }
    const { statusCode, headers } = answer
    const refused = statusCode < 200 || statusCode > 599 ? `unexpected HTTP status ${statusCode}` : redirect === 'error' && REDIRECTS.has(statusCode) ? 'unexpected redirect' : null
    if (refused !== null) {
      discard(answer.body)
      throw new TypeError('fetch failed', { cause: new Error(refused) })
    }
    // The header pairs as undici parsed them: Response makes its Headers of them (once).
    const pairs: Array<[string, string]> = []
    for (const name in headers) {
      const value = headers[name]
      if (Array.isArray(value)) for (const v of value) pairs.push([name, v])
      else if (value !== undefined) pairs.push([name, value])
    }
    const nullBody = NULL_BODY.has(statusCode) || init?.method?.toUpperCase() === 'HEAD'
    if (nullBody) discard(answer.body)
    try {
      const coding = headers['content-encoding']
      const stream = nullBody ? null : decoded(answer.body, Array.isArray(coding) ? coding.join(',') : coding ?? null)
      return new LeanResponse(statusCode, answer.statusText ?? '', pairs, stream) as unknown as Response
    } catch (err) {
      // A status text Response refuses.
      discard(answer.body)
      throw new TypeError('fetch failed', { cause: err })
    }
  }
}

/** Drops an answer's body unread (undici's stream errs when destroyed before its end: nobody listens any more). */
function discard (body: Readable): void {
  body.on('error', () => {})
  body.destroy()
}

const REDIRECTS: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])
const NULL_BODY: ReadonlySet<number> = new Set([204, 205, 304])

/** The request's headers as undici takes them, with what fetch adds when the caller did not say. */
function requestHeaders (given: RequestInit['headers'], hasBody: boolean): string[] {
  // The SDK gives a Headers (names valid and lower-cased already); anything else is made one.
  const headers = given instanceof Headers ? given : new Headers(given)
  const flat: string[] = []
  for (const [name, value] of headers) flat.push(name, value)
  if (!headers.has('accept')) flat.push('accept', '*/*')
  if (hasBody && !headers.has('content-type')) flat.push('content-type', 'text/plain;charset=UTF-8')
  if (!headers.has('user-agent')) flat.push('user-agent', 'toolgate')
  return flat
}

/**
 * The body as sent, decoded as fetch decodes it (fetch asks for gzip and
 * deflate; a server may send brotli unasked). An abort reaches the decoded
 * stream as undici's error on the body.
 */
function decoded (body: Readable, coding: string | null): Readable {
  const codings = coding === null ? [] : coding.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  let out = body
  // Codings are listed in the order they were applied: undone last first.
  for (const c of codings.reverse()) {
    const step = c === 'gzip' || c === 'x-gzip' ? createGunzip() : c === 'deflate' ? createInflate() : c === 'br' ? createBrotliDecompress() : null
    // A coding fetch does not know leaves the body as it came (as fetch does).
    if (step === null) return body
    const from = out
    from.on('error', (err) => step.destroy(err))
    out = from.pipe(step)
  }
  return out
}

/**
 * A Node stream as a web stream, read as it is pulled; cancelling it drops
 * the rest. (Node 20's Readable.toWeb throws "Controller is already closed"
 * when the Node stream ends after the web stream was cancelled.)
 */
function webStream (stream: Readable): ReadableStream<Uint8Array> {
  const chunks = stream[Symbol.asyncIterator]()
  return new ReadableStream<Uint8Array>({
    async pull (controller) {
      const next = await chunks.next() as IteratorResult<Buffer>
      if (next.done === true) controller.close()
      else controller.enqueue(new Uint8Array(next.value.buffer, next.value.byteOffset, next.value.byteLength))
    },
    cancel () { discard(stream) }
  }, { highWaterMark: 0 })
}

/** Response as a class to extend: the DOM types declare its members as properties, which a class cannot override. */
const ResponseClass = Response as unknown as new (body: null, init: ResponseInit) => { readonly headers: Headers }

/**
 * A Response whose body stays undici's Node stream until something asks
 * for it as a web stream: `text()`, `json()`, `arrayBuffer()` and `bytes()`
 * read the Node stream directly.
 */
class LeanResponse extends ResponseClass {
  readonly #stream: Readable | null
  #web: ReadableStream<Uint8Array> | null = null
  #used = false

  constructor (status: number, statusText: string, headers: Array<[string, string]>, stream: Readable | null) {
    super(null, { status, statusText, headers })
    this.#stream = stream
  }

  get body (): ReadableStream<Uint8Array> | null {
    if (this.#stream === null) return null
    this.#web ??= webStream(this.#stream)
    return this.#web
  }

  get bodyUsed (): boolean {
    return this.#used || (this.#web?.locked ?? false)
  }

  async text (): Promise<string> {
    return (await this.#bytes()).toString('utf8')
  }

  async json (): Promise<unknown> {
    return JSON.parse(await this.text())
  }

  async arrayBuffer (): Promise<ArrayBuffer> {
    const bytes = await this.#bytes()
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
  }

  async bytes (): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await this.arrayBuffer())
  }

  async blob (): Promise<Blob> {
    return new Blob([await this.arrayBuffer()], { type: this.headers.get('content-type') ?? '' })
  }

  clone (): Response {
    throw new TypeError('toolgate\'s MCP client does not clone its responses')
  }

  async #bytes (): Promise<Buffer> {
    if (this.bodyUsed) throw new TypeError('Body is unusable: Body has already been read')
    this.#used = true
    if (this.#stream === null) return Buffer.alloc(0)
    if (this.#web !== null) return Buffer.from(await new Response(this.#web).arrayBuffer())
    const chunks: Buffer[] = []
    for await (const chunk of this.#stream) chunks.push(chunk as Buffer)
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
  }
}
