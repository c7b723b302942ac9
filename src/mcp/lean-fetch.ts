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
 * redirects not followed) as one undici dispatch, which writes head and body
 * in one go, with a handler of its own (no `request` API: its handler, async
 * resource and Node stream per request cost a fifth of the exchange), and
 * answers a `Response` whose body is the socket's chunks as they came: the
 * SDK's `text()` or `json()` joins them, and a web stream is made only when
 * the body itself is asked for (an SSE answer, the GET stream of
 * notifications), paused while nobody reads it. It behaves as fetch does
 * where the SDK and toolgate can tell: a failure to connect or send rejects
 * with fetch's `TypeError` carrying the cause (classify.ts reads its code),
 * an abort with the signal's reason, a redirect under `redirect: 'error'`
 * with a `TypeError`; an informational answer is passed over; a gzip,
 * deflate or brotli answer is decoded. Anything else (a stream or form body,
 * a redirect to follow) goes to `fallback`.
 */
import { PassThrough, type Readable } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { type Dispatcher, getGlobalDispatcher } from 'undici'

export function leanFetch (fallback: FetchLike): FetchLike {
  return async (input, init) => {
    const body = init?.body
    const redirect = init?.redirect
    const url = typeof input === 'string' && /^https?:/i.test(input) ? new URL(input) : input instanceof URL ? input : null
    if (url === null || !/^https?:$/.test(url.protocol) || url.username !== '' || url.password !== '' ||
      (body != null && typeof body !== 'string') || (redirect !== 'manual' && redirect !== 'error')) {
      return await fallback(input, init)
    }
    const signal = init?.signal ?? undefined
    if (signal?.aborted === true) throw signal.reason
    const method = (init?.method ?? 'GET').toUpperCase()
    return await new Promise<Response>((resolve, reject) => {
      const exchange = new Exchange(resolve, reject, signal, redirect, method === 'HEAD')
      try {
        getGlobalDispatcher().dispatch({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: method as Dispatcher.HttpMethod,
          headers: requestHeaders(init?.headers, typeof body === 'string'),
          body: body ?? null
        }, exchange)
      } catch (err) {
        exchange.onResponseError(null, err as Error)
      }
    })
  }
}

/**
 * One request as an undici dispatch handler: the promise of its Response
 * settles when the answer's head arrives (or the request fails), then its
 * chunks go to the Response's body. The caller's signal aborts it through
 * undici's controller, and its listener goes with the exchange's end.
 */
class Exchange implements Dispatcher.DispatchHandler {
  readonly #resolve: (res: Response) => void
  readonly #reject: (err: unknown) => void
  readonly #signal: AbortSignal | undefined
  readonly #redirect: 'manual' | 'error'
  readonly #head: boolean
  #controller: Dispatcher.DispatchController | null = null
  #body: Chunks | null = null
  #answered = false
  #over = false
  readonly #onAbort = (): void => { this.#abort() }

  constructor (resolve: (res: Response) => void, reject: (err: unknown) => void, signal: AbortSignal | undefined, redirect: 'manual' | 'error', head: boolean) {
    this.#resolve = resolve
    this.#reject = reject
    this.#signal = signal
    this.#redirect = redirect
    this.#head = head
    signal?.addEventListener('abort', this.#onAbort, { once: true })
  }

  /** Called just before the request is written: aborting here writes nothing. */
  onRequestStart (controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#over) controller.abort(this.#signal?.reason ?? new Error('aborted'))
  }

  onResponseStart (controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, statusText?: string): void {
    // An informational answer (103 Early Hints, say) comes before the answer itself, which fetch waits for.
    if (statusCode >= 100 && statusCode < 200 && statusCode !== 101) return
    const refused = statusCode < 200 || statusCode > 599 ? `unexpected HTTP status ${statusCode}` : this.#redirect === 'error' && REDIRECTS.has(statusCode) ? 'unexpected redirect' : null
    if (refused !== null) {
      this.#fail(new TypeError('fetch failed', { cause: new Error(refused) }))
      controller.abort(new Error(refused))
      return
    }
    // The header pairs as undici parsed them: Response makes its Headers of them (once).
    const pairs: Array<[string, string]> = []
    for (const name in headers) {
      const value = headers[name]
      if (Array.isArray(value)) for (const v of value) pairs.push([name, v])
      else if (value !== undefined) pairs.push([name, value])
    }
    const coding = headers['content-encoding']
    const nullBody = NULL_BODY.has(statusCode) || this.#head
    let res: Response
    try {
      this.#body = nullBody ? null : new Chunks(controller)
      const body = this.#body === null ? null : decoded(this.#body, Array.isArray(coding) ? coding.join(',') : coding ?? null)
      res = new LeanResponse(statusCode, statusText ?? '', pairs, body) as unknown as Response
    } catch (err) {
      // A status text Response refuses.
      this.#fail(new TypeError('fetch failed', { cause: err }))
      controller.abort(err as Error)
      return
    }
    this.#answered = true
    this.#resolve(res)
  }

  onResponseData (_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#body?.push(chunk)
  }

  onResponseEnd (): void {
    this.#end()
    this.#body?.end()
  }

  onResponseError (_controller: Dispatcher.DispatchController | null, err: Error): void {
    this.#fail(this.#signal?.aborted === true ? this.#signal.reason : this.#answered ? err : new TypeError('fetch failed', { cause: err }))
  }

  #abort (): void {
    const reason: unknown = this.#signal?.reason
    this.#fail(reason)
    // Before the request is written (waiting for a socket), onRequestStart aborts it.
    this.#controller?.abort(reason instanceof Error ? reason : new Error('aborted', { cause: reason }))
  }

  /** The exchange failed: the Response's promise rejects, or its body fails when it came already. */
  #fail (err: unknown): void {
    if (this.#over) return
    this.#end()
    if (this.#answered) this.#body?.fail(err)
    else this.#reject(err)
  }

  #end (): void {
    this.#over = true
    this.#signal?.removeEventListener('abort', this.#onAbort)
  }
}

/**
 * An answer's body as its chunks come, read one of two ways: joined whole
 * (`text()`, `json()`), or as a web stream; a Node stream when it has a
 * content coding to undo. Nobody reading it yet, past HIGH_WATER bytes the
 * socket pauses.
 */
class Chunks {
  readonly #controller: Dispatcher.DispatchController
  #held: Buffer[] = []
  #size = 0
  #ended = false
  #error: { err: unknown } | null = null
  /** Someone waits for the whole body. */
  #whole: { resolve: (b: Buffer) => void, reject: (err: unknown) => void } | null = null
  #stream: ReadableStreamDefaultController<Uint8Array> | null = null
  #node: PassThrough | null = null

  constructor (controller: Dispatcher.DispatchController) {
    this.#controller = controller
  }

  push (chunk: Buffer): void {
    if (this.#stream !== null) {
      this.#stream.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
      if ((this.#stream.desiredSize ?? 0) <= 0) this.#controller.pause()
      return
    }
    if (this.#node !== null) {
      if (!this.#node.write(chunk)) this.#controller.pause()
      return
    }
    this.#held.push(chunk)
    this.#size += chunk.byteLength
    if (this.#whole === null && this.#size > HIGH_WATER) this.#controller.pause()
  }

  end (): void {
    this.#ended = true
    if (this.#stream !== null) this.#stream.close()
    else if (this.#node !== null) this.#node.end()
    else if (this.#whole !== null) this.#whole.resolve(this.#joined())
  }

  fail (err: unknown): void {
    if (this.#ended) return
    this.#error = { err }
    if (this.#stream !== null) this.#stream.error(err)
    else if (this.#node !== null) this.#node.destroy(err as Error)
    else if (this.#whole !== null) this.#whole.reject(err)
  }

  /** The whole body, once it has come. */
  async whole (): Promise<Buffer> {
    if (this.#error !== null) throw this.#error.err
    if (this.#ended) return this.#joined()
    return await new Promise<Buffer>((resolve, reject) => {
      this.#whole = { resolve, reject }
      this.#controller.resume()
    })
  }

  /** The body as a web stream: what came so far, then the rest as it is pulled. */
  web (): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        for (const chunk of this.#held) controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
        this.#held = []
        if (this.#error !== null) controller.error(this.#error.err)
        else if (this.#ended) controller.close()
        else this.#stream = controller
      },
      pull: () => { this.#controller.resume() },
      cancel: () => { this.cancel() }
    }, { highWaterMark: 1 })
  }

  /** The body as a Node stream (to be decoded). */
  node (): Readable {
    const node = new PassThrough()
    for (const chunk of this.#held) node.write(chunk)
    this.#held = []
    if (this.#error !== null) node.destroy(this.#error.err as Error)
    else if (this.#ended) node.end()
    else {
      this.#node = node
      node.on('drain', () => { this.#controller.resume() })
    }
    return node
  }

  /** Nobody will read the rest: the exchange stops (its connection is not reused). */
  cancel (): void {
    if (this.#ended || this.#error !== null) return
    this.#error = { err: new Error('the body was cancelled') }
    this.#controller.abort(this.#error.err as Error)
  }

  #joined (): Buffer {
    const held = this.#held
    this.#held = []
    return held.length === 1 ? held[0]! : Buffer.concat(held)
  }
}

/** How much of an answer nobody reads yet is held before the socket pauses. */
const HIGH_WATER = 64 * 1024

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
 * deflate; a server may send brotli unasked): the chunks as they come when
 * it has no coding, else a Node stream through the decoders. A failure of
 * the exchange reaches the decoded stream; the decoded stream's end before
 * the body's (it was cancelled) stops the exchange.
 */
function decoded (body: Chunks, coding: string | null): Chunks | Readable {
  const codings = coding === null ? [] : coding.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  const steps: Array<Readable & NodeJS.WritableStream> = []
  // Codings are listed in the order they were applied: undone last first.
  for (const c of codings.reverse()) {
    const step = c === 'gzip' || c === 'x-gzip' ? createGunzip() : c === 'deflate' ? createInflate() : c === 'br' ? createBrotliDecompress() : null
    // A coding fetch does not know leaves the body as it came (as fetch does).
    if (step === null) return body
    steps.push(step)
  }
  if (steps.length === 0) return body
  let out: Readable = body.node()
  for (const step of steps) {
    const from = out
    from.on('error', (err) => step.destroy(err))
    out = from.pipe(step)
  }
  out.once('close', () => { body.cancel() })
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
    cancel () {
      stream.on('error', () => {})
      stream.destroy()
    }
  }, { highWaterMark: 0 })
}

/** Response as a class to extend: the DOM types declare its members as properties, which a class cannot override. */
const ResponseClass = Response as unknown as new (body: null, init: ResponseInit) => { readonly headers: Headers }

/**
 * A Response whose body stays the exchange's chunks (or, decoded, a Node
 * stream) until something asks for it as a web stream: `text()`, `json()`,
 * `arrayBuffer()` and `bytes()` read it directly.
 */
class LeanResponse extends ResponseClass {
  readonly #source: Chunks | Readable | null
  #web: ReadableStream<Uint8Array> | null = null
  #used = false

  constructor (status: number, statusText: string, headers: Array<[string, string]>, source: Chunks | Readable | null) {
    super(null, { status, statusText, headers })
    this.#source = source
  }

  get body (): ReadableStream<Uint8Array> | null {
    if (this.#source === null) return null
    this.#web ??= this.#source instanceof Chunks ? this.#source.web() : webStream(this.#source)
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
    const source = this.#source
    if (source === null) return Buffer.alloc(0)
    if (this.#web !== null) return Buffer.from(await new Response(this.#web).arrayBuffer())
    if (source instanceof Chunks) return await source.whole()
    const chunks: Buffer[] = []
    for await (const chunk of source) chunks.push(chunk as Buffer)
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
  }
}
