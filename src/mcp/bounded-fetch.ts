import { setImmediate as nextTurn } from 'node:timers/promises'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { parseJsonInSlices } from './sliced-json.js'
import { readSseAnswer } from './sliced-sse.js'

/**
 * A tools/call answer longer than toolgate reads (SPEC §18): the call is
 * stopped with this error, never with one a server could send, so that
 * classify.ts can tell it apart.
 */
export class ResponseTooLargeError extends McpError {
  constructor (limit: number) {
    super(ErrorCode.InternalError, `the answer is longer than ${limit} bytes`)
    this.name = 'ResponseTooLargeError'
  }
}

/** The longest answer to anything else toolgate asks a server (a page of tools/list). */
export const MAX_OTHER_RESPONSE_BYTES = 16 * 1024 * 1024

/** A tools/list page is parsed in slices of at most about this long (see sliced-json.ts). */
const PARSE_SLICE_MS = 10

/** A tools/call in flight whose answer is bounded: `abort` stops it with the reason given. */
export interface BoundedCall { abort (reason: Error): void }

/**
 * A fetch for the Streamable HTTP transport that reads at most `limit`
 * bytes of the answer to a POST: a tools/call's answer (JSON or an SSE
 * stream) at most `callLimit`, any other answer at most
 * MAX_OTHER_RESPONSE_BYTES. Past the limit the body stream fails, and the
 * tools/call it answers (found by the operation id in its `_meta`) is
 * stopped at once with ResponseTooLargeError, so that neither a whole
 * 100 MB answer nor an endless stream is read. The long-lived GET stream of
 * server notifications is not bounded as a whole, but each of its events
 * is: one longer than MAX_EVENT_BYTES ends the stream (the SDK reconnects
 * it) before it is parsed. A tools/list page
 * answered as JSON is read, then parsed in slices when the SDK asks for it;
 * one answered as an SSE stream is read up to its response, each event
 * parsed in slices (sliced-sse.ts), and handed to the SDK as JSON: a list
 * of 20,000 tools never holds the event loop (SPEC §19).
 */
export function boundedFetch (callLimit: number, calls: ReadonlyMap<string, BoundedCall>, base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const res = await base(url, init)
    const operationId = init?.method === 'POST' ? toolsCallOperation(init.body, calls) : null
    // A tools/call answered as JSON of a declared length within the bound, and not compressed, is bounded by its
    // framing already (the body ends at its Content-Length): it is handed on as it came, without a counting stream
    // (and before its body is asked for: lean-fetch.ts makes a web stream of it only then).
    if (operationId !== null && res.ok && withinLength(res.headers, callLimit) && mediaType(res.headers) === 'application/json') return res
    if (res.body === null) return res
    // The stream of server notifications: each event bounded, the stream as a whole not.
    if (init?.method === 'GET') return mediaType(res.headers) === 'text/event-stream' ? new Response(boundEvents(res.body, MAX_EVENT_BYTES), { status: res.status, statusText: res.statusText, headers: res.headers }) : res
    if (init?.method !== 'POST') return res
    const limit = operationId === null ? Math.max(MAX_OTHER_RESPONSE_BYTES, callLimit) : callLimit
    let read = 0
    const counted = res.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
      transform (chunk, controller) {
        read += chunk.byteLength
        if (read > limit) {
          const err = new ResponseTooLargeError(limit)
          if (operationId !== null) calls.get(operationId)?.abort(err)
          controller.error(err)
          return
        }
        controller.enqueue(chunk)
      }
    }))
    const init2 = { status: res.status, statusText: res.statusText, headers: res.headers }
    const list = toolsListId(init.body)
    const type = mediaType(res.headers)
    if (list === NOT_LISTING || !res.ok || (type !== 'application/json' && type !== 'text/event-stream')) return new Response(counted, init2)
    if (type === 'text/event-stream') {
      // Read here up to the response, and handed to the SDK as a JSON answer of those messages, in their order
      // (or, when the server ended the stream before its response, as the SSE it was, for the SDK to resume).
      const read = await readSseAnswer(counted, list, slicedParse)
      if ('sse' in read) return new Response(read.sse, init2)
      const headers = new Headers(res.headers)
      headers.set('content-type', 'application/json')
      const page = new Response(null, { status: res.status, statusText: res.statusText, headers })
      Object.defineProperty(page, 'json', { value: () => Promise.resolve(read.messages) })
      return page
    }
    const text = await new Response(counted).text()
    const page = new Response(text, init2)
    Object.defineProperty(page, 'json', { value: () => slicedParse(text) })
    return page
  }
}

/** The longest event toolgate reads on a server's stream of notifications (a progress or log message is a few hundred bytes). */
export const MAX_EVENT_BYTES = 1024 * 1024

/**
 * A server-sent event stream whose events are each at most `limit` bytes
 * (an event ends at a blank line; carriage returns are not counted): past
 * it, the stream fails before the event is read whole or parsed.
 */
export function boundEvents (body: ReadableStream<Uint8Array>, limit: number): ReadableStream<Uint8Array> {
  let size = 0
  let lineEnded = false
  return body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
    transform (chunk, controller) {
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]
        if (b === CR) continue
        if (b === LF) {
          if (lineEnded) {
            size = 0
            lineEnded = false
            continue
          }
          lineEnded = true
        } else {
          lineEnded = false
        }
        if (++size > limit) {
          controller.error(new McpError(ErrorCode.InternalError, `the server sent an event longer than ${limit} bytes on its stream of notifications`))
          return
        }
      }
      controller.enqueue(chunk)
    }
  }))
}

const CR = 0x0d
const LF = 0x0a

function slicedParse (text: string): Promise<unknown> {
  return parseJsonInSlices(text, async () => { await nextTurn() }, PARSE_SLICE_MS)
}

function mediaType (headers: Headers): string {
  return (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
}

/** What toolsListId answers for any other request. */
const NOT_LISTING = Symbol('not a tools/list request')

/** The id of a tools/list request body, or NOT_LISTING. */
function toolsListId (body: unknown): unknown {
  if (typeof body !== 'string' || !body.includes('"tools/list"')) return NOT_LISTING
  try {
    const msg = JSON.parse(body) as { method?: unknown, id?: unknown }
    return msg.method === 'tools/list' && msg.id !== undefined ? msg.id : NOT_LISTING
  } catch {
    return NOT_LISTING
  }
}

/** Whether the answer declares a length of at most `limit` bytes, as sent (no content coding, which the body would be decoded from). */
function withinLength (headers: Headers, limit: number): boolean {
  const coding = headers.get('content-encoding')
  if (coding !== null && coding.trim().toLowerCase() !== 'identity') return false
  const length = headers.get('content-length')
  return length !== null && /^\d{1,15}$/.test(length) && Number(length) <= limit
}

/** Where the operation id stands in a tools/call request as the SDK writes it: `_meta` comes after the arguments. */
const OPERATION_KEY = '"toolgate/operationId":"'

/**
 * The operation id of a tools/call request body, or null for any other
 * message. The SDK writes `{"method":"tools/call",...}` with the call's
 * `_meta` after its arguments, so the id is read without parsing the body:
 * the last operation id key's value, when it names a call in flight (an
 * argument cannot hide one after `_meta`). Anything else is parsed.
 */
function toolsCallOperation (body: unknown, calls: ReadonlyMap<string, BoundedCall>): string | null {
  if (typeof body !== 'string' || !body.includes('"tools/call"')) return null
  if (body.startsWith('{"method":"tools/call",')) {
    const at = body.lastIndexOf(OPERATION_KEY)
    const end = at < 0 ? -1 : body.indexOf('"', at + OPERATION_KEY.length)
    const id = end < 0 ? '' : body.slice(at + OPERATION_KEY.length, end)
    if (calls.has(id)) return id
  }
  try {
    const msg = JSON.parse(body) as { method?: unknown, params?: { _meta?: Record<string, unknown> } }
    const id = msg.method === 'tools/call' ? msg.params?._meta?.['toolgate/operationId'] : undefined
    return typeof id === 'string' ? id : null
  } catch {
    return null
  }
}
