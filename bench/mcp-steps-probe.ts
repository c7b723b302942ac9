/**
 * Preloaded (`node --import`) into toolgate's `/mcp` bench child by
 * bench/mcp-steps.ts: times each `/mcp` POST step by step from Node's and
 * undici's diagnostics channels (the request's start, the upstream request
 * created and written, its answer's head and end, the answer to the client
 * finished), and answers the calls timed since the last ask on a
 * `{type: 'probe'}` message. For calls one at a time: a call's upstream
 * request is the first one made while its `/mcp` request is open. Only a
 * request's method, path and times are looked at, never its body.
 */
import { subscribe } from 'node:diagnostics_channel'
import type { IncomingMessage } from 'node:http'
import { performance } from 'node:perf_hooks'

/** The marks of a call, in the order they come. */
export const MARKS = ['in', 'upstream created', 'upstream written', 'upstream head', 'upstream end', 'out'] as const

export interface StepsAnswer {
  type: 'probe'
  id: number
  /** Per call timed whole: each mark after the first, in ms after it. */
  calls: number[][]
}

/** The marks of the `/mcp` request open now. */
let open: number[] | null = null
const byRequest = new WeakMap<IncomingMessage, number[]>()
let calls: number[][] = []

/** Notes mark `i` of the open call, when the marks before it are there and it is not. */
function mark (i: number): void {
  if (open !== null && open.length === i) open.push(performance.now())
}

subscribe('http.server.request.start', (message) => {
  const { request } = message as { request: IncomingMessage }
  if (request.method !== 'POST' || request.url?.split('?')[0]?.endsWith('/mcp') !== true) return
  open = [performance.now()]
  byRequest.set(request, open)
})
subscribe('undici:request:create', () => { mark(1) })
subscribe('undici:request:bodySent', () => { mark(2) })
subscribe('undici:request:headers', () => { mark(3) })
subscribe('undici:request:trailers', () => { mark(4) })
subscribe('http.server.response.finish', (message) => {
  const { request } = message as { request: IncomingMessage }
  const marks = byRequest.get(request)
  if (marks === undefined) return
  if (marks.length === MARKS.length - 1) calls.push([...marks.slice(1), performance.now()].map((t) => t - marks[0]!))
  if (open === marks) open = null
})

process.on('message', (msg: { type?: string, id?: number }) => {
  if (msg.type !== 'probe' || msg.id === undefined) return
  const answer: StepsAnswer = { type: 'probe', id: msg.id, calls }
  calls = []
  process.send?.(answer)
})
