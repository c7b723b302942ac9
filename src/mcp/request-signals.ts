/**
 * A signal of its own for each request of an MCP session.
 *
 * The SDK's Streamable HTTP client passes one long-lived `AbortSignal` (the
 * session's) to every fetch of a session. undici adds an abort listener to
 * the signal it is given for each request, and removes it only when that
 * request is garbage-collected, so on a busy session the session's signal
 * gathers listeners by the thousand between two collections: each request
 * counts them again, and past 1,500 Node prints a
 * `MaxListenersExceededWarning` that reads like a leak.
 *
 * `ownSignals(fetch)` gives each request a signal of its own instead, aborted
 * with the session's reason when the session's is: the session's signal
 * carries one listener however many requests it has. The request's signal
 * lives as long as undici keeps its request (it holds its controller), and
 * its entry here goes when it is collected. `AbortSignal.any` would do the
 * same on Node 22+, but on Node 20 the source signal keeps a reference for
 * every signal ever made from it.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'

/** The live requests' controllers of each session signal. */
const requests = new WeakMap<AbortSignal, Set<WeakRef<AbortController>>>()

/** A request's entry goes from its session's set once its signal is collected. */
const collected = new FinalizationRegistry<{ live: Set<WeakRef<AbortController>>, ref: WeakRef<AbortController> }>(({ live, ref }) => { live.delete(ref) })

/** Keeps a request's controller alive for as long as its signal is. */
const CONTROLLER = Symbol('controller')

/** A signal for one request, aborted when `session` is. */
export function requestSignal (session: AbortSignal): AbortSignal {
  if (session.aborted) return session
  let live = requests.get(session)
  if (live === undefined) {
    const set = new Set<WeakRef<AbortController>>()
    live = set
    requests.set(session, set)
    session.addEventListener('abort', () => {
      for (const ref of set) ref.deref()?.abort(session.reason)
      set.clear()
    }, { once: true })
  }
  const controller = new AbortController()
  const ref = new WeakRef(controller)
  live.add(ref)
  Object.defineProperty(controller.signal, CONTROLLER, { value: controller })
  collected.register(controller.signal, { live, ref })
  return controller.signal
}

/** How many requests of `session` still hold a signal of their own (a test's view). */
export function liveRequests (session: AbortSignal): number {
  return requests.get(session)?.size ?? 0
}

/** `base` with each request's signal replaced by one of its own (see above). */
export function ownSignals (base: FetchLike): FetchLike {
  return (url, init) => init?.signal == null ? base(url, init) : base(url, { ...init, signal: requestSignal(init.signal) })
}
