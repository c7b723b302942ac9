import type { BatchEvent } from '../model/result.js'
import type { LoopKind } from '../model/loops.js'
import type { EventsAudience } from '../model/run.js'
import type { BatchObserver } from '../telemetry/types.js'
import { IsoTime } from '../iso-time.js'

const EVENT_TIMES = new IsoTime()

/** Tool lifecycle events stay internal under the stock audience policy. */
const LIFECYCLE = new Set<BatchEvent['type']>(['epoch.started', 'epoch.settled', 'call.started', 'call.progress', 'call.completed', 'tool.repeat_detected'])

/**
 * Numbers events in the real order they happen and keeps those the run's
 * audience policy lets the host see; `listener` gets each as it happens
 * (the server-sent event stream).
 */
export class EventRecorder implements BatchObserver {
  readonly events: BatchEvent[] = []
  #seq = 0
  /** Whether the host sees lifecycle events (audience `lifecycle`); when not, they are not even built. */
  readonly #lifecycle: boolean
  readonly #listener: ((event: BatchEvent) => void) | undefined

  constructor (audience: EventsAudience, listener?: (event: BatchEvent) => void) {
    this.#lifecycle = audience === 'lifecycle'
    this.#listener = listener
  }

  /** Continues a batch taken up after it waited (src/approvals): its events so far, numbered, come first. */
  continueFrom (events: readonly BatchEvent[]): void {
    this.events.push(...events)
    this.#seq = events.at(-1)?.seq ?? this.#seq
  }

  /** Numbers the host's events 1, 2, 3… in the order they happen; internal ones are not kept. */
  emit (event: Omit<BatchEvent, 'seq' | 'at'>): BatchEvent | undefined {
    if (!this.#lifecycle && LIFECYCLE.has(event.type)) return undefined
    const full = { seq: ++this.#seq, at: EVENT_TIMES.at(Date.now()), ...event } as BatchEvent
    this.events.push(full)
    this.#listener?.(full)
    return full
  }

  epochStarted (epoch: number, size: number): void {
    if (!this.#lifecycle) return
    this.emit({ type: 'epoch.started', epoch, size })
  }

  epochSettled (epoch: number, size: number, durationMs: number): void {
    if (!this.#lifecycle) return
    this.emit({ type: 'epoch.settled', epoch, size, durationMs: round(durationMs) })
  }

  callStarted (call: { callId: string, tool: string, epoch: number | null }): void {
    if (!this.#lifecycle) return
    this.emit({ type: 'call.started', callId: call.callId, tool: call.tool, ...(call.epoch === null ? {} : { epoch: call.epoch }) })
  }

  /** An executor's progress report during a call (an MCP server's): its numbers, never its message. */
  callProgress (call: { callId: string, tool: string, epoch: number | null }, update: { progress: number, total?: number | undefined }): void {
    if (!this.#lifecycle) return
    this.emit({ type: 'call.progress', callId: call.callId, tool: call.tool, ...(call.epoch === null ? {} : { epoch: call.epoch }), progress: update.progress, ...(update.total === undefined ? {} : { total: update.total }) })
  }

  callSettled (call: { callId: string, tool: string, epoch: number | null, status: string, durationMs: number | null }): void {
    if (!this.#lifecycle) return
    // Only calls that ran complete; the others never started.
    if (call.durationMs === null) return
    this.emit({ type: 'call.completed', callId: call.callId, tool: call.tool, ...(call.epoch === null ? {} : { epoch: call.epoch }), status: call.status, durationMs: round(call.durationMs) })
  }

  repeatDetected (call: { callId: string, tool: string }, action: 'advisory' | 'terminated', count: number, kind: LoopKind = 'exact'): void {
    if (!this.#lifecycle) return
    this.emit({ type: 'tool.repeat_detected', callId: call.callId, tool: call.tool, kind, action, count })
  }

  runTerminated (reason: string): void {
    this.emit({ type: 'run.terminated', reason })
  }
}

export function round (ms: number): number {
  return Math.round(ms * 1000) / 1000
}
