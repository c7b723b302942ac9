/**
 * Small tools for tests that drive the scheduler through the app: gates an
 * executor waits on, polling for a condition, and a server-sent events client.
 */
import { Client } from 'undici'
import type { BatchEvent, BatchResponse } from '../../src/model/result.js'

/** A promise the test opens by hand. */
export interface Gate {
  promise: Promise<void>
  open: () => void
}

export function gate (): Gate {
  let open!: () => void
  const promise = new Promise<void>((resolve) => { open = resolve })
  return { promise, open }
}

/** Gates keyed by run and call id: `hold` shuts one, `waitFor` is what an executor behaviour awaits. */
export function callGates (): { hold: (runId: string, callId: string) => Gate, gates: Map<string, Gate>, waitFor: (call: { runId: string, callId: string }) => Promise<void> } {
  const gates = new Map<string, Gate>()
  return {
    gates,
    hold: (runId, callId) => {
      const g = gate()
      gates.set(`${runId}/${callId}`, g)
      return g
    },
    waitFor: async (call) => { await gates.get(`${call.runId}/${call.callId}`)?.promise }
  }
}

/**
 * Waits until `cond` holds, checking between turns of the event loop.
 * Throws after `limitMs` so a broken scheduler fails the test instead of hanging it.
 */
export async function waitFor (cond: () => boolean, what: string, limitMs = 5000): Promise<void> {
  const until = Date.now() + limitMs
  while (!cond()) {
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

/** One server-sent event: `data` is a BatchEvent, or the whole BatchResponse for batch.completed. */
export interface SseEvent { type: string, data: unknown, id?: string }

/** The data of an event that is not batch.completed. */
export const eventOf = (e: SseEvent): BatchEvent => e.data as BatchEvent

/** The response a stream ended with, from its batch.completed event. */
export function responseOf (events: readonly SseEvent[]): BatchResponse {
  const last = events.at(-1)
  if (last?.type !== 'batch.completed') throw new Error(`the stream did not end with batch.completed: ${JSON.stringify(last)}`)
  return last.data as BatchResponse
}

export interface SseResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  /** The events as they arrive; ends when the server ends the stream. */
  events: AsyncGenerator<SseEvent>
  /** The whole body as text, when the answer is not a stream. */
  text: () => Promise<string>
  /** Goes away mid-stream, as a client that closed its tab would. */
  abort: () => void
}

/**
 * POSTs with `Accept: text/event-stream` over real HTTP and parses the stream
 * as it comes. Each request has a connection of its own, closed once the
 * answer has been read, so no idle socket delays the server's close.
 * `signal` lets a test leave before any answer comes.
 */
export async function ssePost (url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<SseResponse> {
  const controller = new AbortController()
  const { origin, pathname, search } = new URL(url)
  const client = new Client(origin)
  const res = await client.request({
    path: pathname + search,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body),
    signal: signal === undefined ? controller.signal : AbortSignal.any([controller.signal, signal])
  }).catch(async (err: unknown) => {
    await client.destroy()
    throw err
  })
  async function * events (): AsyncGenerator<SseEvent> {
    let buffer = ''
    res.body.setEncoding('utf8')
    try {
      for await (const chunk of res.body) {
        buffer += chunk as string
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const event = parseEvent(buffer.slice(0, end))
          if (event !== null) yield event
          buffer = buffer.slice(end + 2)
        }
      }
    } finally {
      await client.close()
    }
    if (buffer.trim() !== '') throw new Error(`stream ended inside an event: ${JSON.stringify(buffer)}`)
  }
  return {
    status: res.statusCode,
    headers: res.headers,
    events: events(),
    text: async () => {
      try {
        return await res.body.text()
      } finally {
        await client.close()
      }
    },
    abort: () => {
      controller.abort()
      void client.destroy()
    }
  }
}

/** One `event:` / `data:` block of a stream. */
function parseEvent (block: string): SseEvent | null {
  let type = 'message'
  let id: string | undefined
  const data: string[] = []
  for (const line of block.split('\n')) {
    if (line.startsWith('event: ')) type = line.slice(7)
    else if (line.startsWith('data: ')) data.push(line.slice(6))
    else if (line.startsWith('id: ')) id = line.slice(4)
  }
  // A block without data (a `retry:` or a comment heartbeat) dispatches no event, as EventSource reads it.
  if (data.length === 0) return null
  return id === undefined ? { type, data: JSON.parse(data.join('\n')) } : { type, id, data: JSON.parse(data.join('\n')) }
}

/** Reads a stream to its end. */
export async function collect (events: AsyncGenerator<SseEvent>): Promise<SseEvent[]> {
  const out: SseEvent[] = []
  for await (const e of events) out.push(e)
  return out
}
