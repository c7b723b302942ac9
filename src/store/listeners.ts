/**
 * This process's listeners of one kind of notice (a run's cancellation, a
 * change of a server's pins). Each subscription is an entry of its own, so
 * one function subscribed twice is two subscriptions.
 */
export class Listeners<A extends unknown[]> {
  readonly #entries = new Set<{ listener: (...args: A) => void }>()

  /** Adds a listener; answers the function that removes it. */
  add (listener: (...args: A) => void): () => void {
    const entry = { listener }
    this.#entries.add(entry)
    return () => { this.#entries.delete(entry) }
  }

  /** Tells every listener. */
  deliver (...args: A): void {
    for (const { listener } of this.#entries) listener(...args)
  }

  /** Tells every listener but `except` (the teller's own). */
  deliverExcept (except: ((...args: A) => void) | undefined, ...args: A): void {
    for (const { listener } of this.#entries) if (listener !== except) listener(...args)
  }

  /** Forgets every listener (the store is closing). */
  clear (): void { this.#entries.clear() }
}
