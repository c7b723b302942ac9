import type { Logger } from 'pino'
import type { BatchEvent } from '../model/result.js'
import type { Store } from '../store/types.js'

/** What a stream waiting for a batch hears. */
export interface WaiterListener {
  event (event: BatchEvent): void
  completed (body: string): void
}

/**
 * The streams of this process that wait for batches held for approvals.
 * What happens to a batch in this process (decisions, its run after the
 * last one) reaches them at once; what happens on another replica reaches
 * them through the store, which `waitForAnswer` reads every poll interval.
 */
export class BatchWaiters {
  readonly #listeners = new Map<string, Set<WaiterListener>>()
  /** Where a poll the store failed is logged. */
  readonly logger: Pick<Logger, 'warn'> | undefined

  constructor (logger?: Pick<Logger, 'warn'>) {
    this.logger = logger
  }

  subscribe (runId: string, batchId: string, listener: WaiterListener): () => void {
    const key = keyOf(runId, batchId)
    let set = this.#listeners.get(key)
    if (set === undefined) this.#listeners.set(key, (set = new Set()))
    set.add(listener)
    return () => {
      set.delete(listener)
      if (set.size === 0 && this.#listeners.get(key) === set) this.#listeners.delete(key)
    }
  }

  publish (runId: string, batchId: string, event: BatchEvent): void {
    for (const l of this.#listeners.get(keyOf(runId, batchId)) ?? []) l.event(event)
  }

  complete (runId: string, batchId: string, body: string): void {
    for (const l of this.#listeners.get(keyOf(runId, batchId)) ?? []) l.completed(body)
  }

  /** Streams waiting in this process (tests, shutdown). */
  get size (): number {
    let n = 0
    for (const set of this.#listeners.values()) n += set.size
    return n
  }
}

function keyOf (runId: string, batchId: string): string {
  return `${runId}\u0000${batchId}`
}

export interface WaitOptions {
  store: Store
  waiters: BatchWaiters
  runId: string
  batchId: string
  /** The last event the stream sent; later ones are sent once each, in order. */
  lastSeq: number
  send: (event: BatchEvent) => void
  /** Stops waiting (the client went away, the process is shutting down). */
  signal: AbortSignal
  pollMs: number
}

/**
 * Waits until a held batch has its completed answer, sending the batch's
 * new events meanwhile. Answers the answer's JSON text, or null when the
 * wait was stopped or the batch can no longer complete (its run ended).
 */
export function waitForAnswer (o: WaitOptions): Promise<string | null> {
  let lastSeq = o.lastSeq
  const forward = (e: BatchEvent): void => {
    if (e.seq <= lastSeq || e.type === 'batch.completed') return
    lastSeq = e.seq
    o.send(e)
  }
  return new Promise<string | null>((resolve) => {
    let done = false
    let timer: NodeJS.Timeout | null = null
    const finish = (body: string | null): void => {
      if (done) return
      done = true
      // What happened where this stream could not hear it (another replica) is in the answer: sent before it, once each.
      if (body !== null) for (const e of (JSON.parse(body) as { events?: BatchEvent[] }).events ?? []) forward(e)
      unsubscribe()
      if (timer !== null) clearTimeout(timer)
      o.signal.removeEventListener('abort', onAbort)
      resolve(body)
    }
    const onAbort = (): void => finish(null)
    const unsubscribe = o.waiters.subscribe(o.runId, o.batchId, { event: forward, completed: (body) => finish(body) })
    o.signal.addEventListener('abort', onAbort, { once: true })
    if (o.signal.aborted) return finish(null)
    // The store says what happened on other replicas (and before this stream subscribed).
    let failing = false
    const poll = async (): Promise<void> => {
      if (done) return
      try {
        const record = await o.store.getBatch(o.runId, o.batchId)
        if (record !== undefined) return finish(record.responseJson)
        const run = await o.store.getRun(o.runId)
        if (run === undefined || run.state === 'ended') return finish(null)
        if (run.waiting?.state.batchId === o.batchId) for (const e of run.waiting.state.approvals.events) forward(e)
        failing = false
      } catch (err) {
        // The store is away: the next poll tries again. Logged once per outage, not once per poll.
        if (!failing) o.waiters.logger?.warn({ runId: o.runId, batchId: o.batchId, err: { message: (err as Error).message } }, 'Store failed while a held batch was awaited; polling again')
        failing = true
      }
      if (!done) {
        timer = setTimeout(() => { void poll() }, o.pollMs)
        timer.unref()
      }
    }
    void poll()
  })
}
