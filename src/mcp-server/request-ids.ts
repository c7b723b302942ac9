/**
 * The JSON-RPC ids of one MCP session's requests in flight (SPEC section
 * 16). The SDK's transport and toolgate's lean answers find the HTTP
 * response an answer goes to by its request's id alone, so a second request
 * with the id of one in flight would take the first one's answer. The ids
 * of a POST's requests are checked and held before the transport sees them,
 * and a request whose id is held is refused; an id is free again once its
 * request is answered, once a cancelled request's handler is done (it gets
 * no answer), or when the transport refused the POST. Pure bookkeeping: no
 * HTTP, no SDK.
 */
import type { RequestId } from '@modelcontextprotocol/sdk/types.js'

/** One held id: its request's method once the request is dispatched, null until then. */
interface Held { method: string | null }

export class RequestIds {
  // Keyed by the id itself: JSON-RPC's 1 and "1" are different ids, and a Map keeps them apart.
  readonly #held = new Map<RequestId, Held>()

  /** Whether a request with this id is in flight. */
  inFlight (id: RequestId): boolean {
    return this.#held.has(id)
  }

  /** The first of `ids` that is in flight already or repeated among them; undefined when there is none. */
  taken (ids: readonly RequestId[]): RequestId | undefined {
    const seen = new Set<RequestId>()
    for (const id of ids) {
      if (this.#held.has(id) || seen.has(id)) return id
      seen.add(id)
    }
    return undefined
  }

  /**
   * Holds `ids` (none of them taken) until their requests are answered.
   * Answers a release, to call once the transport has answered the POST:
   * it lets go of the ids it never dispatched a request for.
   */
  hold (ids: readonly RequestId[]): () => void {
    if (ids.length === 0) return () => {}
    const held = ids.map((id): [RequestId, Held] => [id, { method: null }])
    for (const [id, entry] of held) this.#held.set(id, entry)
    return () => {
      for (const [id, entry] of held) if (entry.method === null && this.#held.get(id) === entry) this.#held.delete(id)
    }
  }

  /** The request `id` reached the session's server. */
  dispatched (id: RequestId, method: string): void {
    const entry = this.#held.get(id)
    if (entry === undefined) this.#held.set(id, { method })
    else entry.method = method
  }

  /** The request `id` is answered, or will never be (cancelled): its id is free. Answers its method, when it was dispatched. */
  answered (id: RequestId): string | undefined {
    const entry = this.#held.get(id)
    this.#held.delete(id)
    return entry?.method ?? undefined
  }
}

/** The ids of the JSON-RPC requests in a POST's body, one message or a batch (notifications and responses have none of their own). */
export function requestIdsOf (body: unknown): RequestId[] {
  const ids: RequestId[] = []
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message !== 'object' || message === null || typeof (message as { method?: unknown }).method !== 'string') continue
    const id = (message as { id?: unknown }).id
    if (typeof id === 'string' || typeof id === 'number') ids.push(id)
  }
  return ids
}
