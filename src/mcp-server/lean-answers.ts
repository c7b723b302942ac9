/**
 * The hot request of toolgate's MCP endpoint, a plain `tools/call` on an
 * open session, taken past the SDK's Streamable HTTP server transport and
 * answered by toolgate itself (it costs: the transport turns every Node
 * request into a web Request and its answer into a web stream, and answers
 * every request as a server-sent event stream).
 *
 * The message still goes to the SDK's server (its `onmessage`), which runs
 * the handler as for any request; only the HTTP answer is written here.
 * Its form is chosen as late as the transport allows (MCP, Streamable HTTP:
 * a request is answered as JSON or as an event stream, the server's
 * choice): JSON when the response is the first thing the server sends for
 * the request, the common case; an event stream from the first message the
 * server sends about the request before its response (progress, a log
 * message relayed from an imported server, an elicitation), or when the
 * answer takes longer than the keep-alive interval (a comment keeps
 * intermediaries from closing the connection, as the SDK's streams do).
 * Every other request, and a `tools/call` that is not plainly well formed,
 * goes to the SDK's transport, which answers it as before.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js'

/** How long an answer may be silent before it becomes an event stream with a keep-alive comment (the SDK's streams' interval). */
export const LEAN_KEEP_ALIVE_MS = 15_000

/** The `_meta` keys of a request the SDK checks beyond the envelope: such a request goes to its transport. */
const RELATED_TASK_META = 'io.modelcontextprotocol/related-task'

/** One request answered here: its HTTP response, and whether that is an event stream yet. */
interface LeanAnswer {
  res: ServerResponse
  stream: boolean
  timer: NodeJS.Timeout
}

/**
 * The message of a POST this module answers: a single JSON-RPC `tools/call`
 * request whose envelope is one the SDK's transport accepts (its checks of
 * the Accept and Content-Type headers, the protocol version header and the
 * JSON-RPC request shape), or null for anything else.
 */
export function plainToolsCall (raw: IncomingMessage, body: unknown): JSONRPCRequest | null {
  if (raw.method !== 'POST' || !isRecord(body) || body.method !== 'tools/call' || body.jsonrpc !== '2.0') return null
  const id = body.id
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isSafeInteger(id))) return null
  for (const key in body) if (key !== 'jsonrpc' && key !== 'id' && key !== 'method' && key !== 'params') return null
  const params = body.params
  if (params !== undefined) {
    if (!isRecord(params)) return null
    const meta = params._meta
    if (meta !== undefined) {
      if (!isRecord(meta) || RELATED_TASK_META in meta) return null
      const token = meta.progressToken
      if (token !== undefined && typeof token !== 'string' && !(typeof token === 'number' && Number.isSafeInteger(token))) return null
    }
  }
  const { accept, 'content-type': type, 'mcp-protocol-version': version } = raw.headers
  if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream')) return null
  if (type === undefined || type.split(';')[0]!.trim().toLowerCase() !== 'application/json') return null
  if (version !== undefined && (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))) return null
  return body as JSONRPCRequest
}

/** The requests of one session answered here, by JSON-RPC id. */
export class LeanAnswers {
  readonly #pending = new Map<RequestId, LeanAnswer>()
  readonly #sessionId: () => string | undefined

  constructor (sessionId: () => string | undefined) {
    this.#sessionId = sessionId
  }

  /** The request `id` is answered on `res` (taken from the web framework). */
  take (id: RequestId, res: ServerResponse): void {
    const answer: LeanAnswer = { res, stream: false, timer: setTimeout(() => { this.#keepAlive(answer) }, LEAN_KEEP_ALIVE_MS) }
    answer.timer.unref()
    this.#pending.set(id, answer)
    // The client went away (it cancelled, or the session ended): nothing more is written.
    res.once('close', () => { if (this.#pending.get(id) === answer) this.#forget(id, answer) })
  }

  /**
   * Writes `message` when it belongs to a request answered here (its
   * response, or a message sent about it); false when it does not, for the
   * SDK's transport to send.
   */
  send (message: JSONRPCMessage, relatedRequestId: RequestId | undefined): boolean {
    const isResponse = !('method' in message) && 'id' in message
    const id = isResponse ? message.id : relatedRequestId
    if (id === undefined || id === null) return false
    const answer = this.#pending.get(id)
    if (answer === undefined) return false
    const { res } = answer
    if (!isResponse) {
      this.#event(answer, message)
      return true
    }
    this.#forget(id, answer)
    if (res.destroyed || res.writableEnded) return true
    if (answer.stream) {
      res.end(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
      return true
    }
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    const sessionId = this.#sessionId()
    if (sessionId !== undefined) headers['mcp-session-id'] = sessionId
    res.writeHead(200, headers).end(JSON.stringify(message))
    return true
  }

  /** The session closed: its answers still open end (an event stream that ends before the response, as the SDK's do). */
  closeAll (): void {
    for (const id of [...this.#pending.keys()]) this.drop(id)
  }

  /**
   * The request `id` gets no answer (it was cancelled): its response, if
   * it is answered here, ends without one, and the id is no longer
   * answered here (a later request may reuse it).
   */
  drop (id: RequestId): void {
    const answer = this.#pending.get(id)
    if (answer === undefined) return
    this.#forget(id, answer)
    if (answer.res.destroyed || answer.res.writableEnded) return
    this.#open(answer)
    answer.res.end()
  }

  #event (answer: LeanAnswer, message: JSONRPCMessage): void {
    if (answer.res.destroyed || answer.res.writableEnded) return
    this.#open(answer)
    answer.res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
  }

  #keepAlive (answer: LeanAnswer): void {
    if (answer.res.destroyed || answer.res.writableEnded) return
    this.#open(answer)
    answer.res.write(': keepalive\n\n')
    answer.timer = setTimeout(() => { this.#keepAlive(answer) }, LEAN_KEEP_ALIVE_MS)
    answer.timer.unref()
  }

  /** Makes the answer an event stream, if it is not one yet. */
  #open (answer: LeanAnswer): void {
    if (answer.stream) return
    answer.stream = true
    const headers: Record<string, string> = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' }
    const sessionId = this.#sessionId()
    if (sessionId !== undefined) headers['mcp-session-id'] = sessionId
    answer.res.writeHead(200, headers)
  }

  #forget (id: RequestId, answer: LeanAnswer): void {
    clearTimeout(answer.timer)
    this.#pending.delete(id)
  }
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
