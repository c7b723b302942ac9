/**
 * A batch's per-call work in slices of the event loop (SPEC section 19: no
 * request holds it for more than 100 ms): one call's work is bounded on its
 * own, and a batch of many costly calls does not add them up into one stall.
 */
import { performance } from 'node:perf_hooks'

/** How long a batch's per-call work holds the event loop before it gives it back. */
export const SLICE_MS = 20

/**
 * With a `weigh`, the clock is read only once the items' weight since the
 * last reading passes this: writing this many characters of JSON takes a
 * millisecond or two at most, and ordinary calls weigh far less.
 */
const CLOCK_WEIGHT = 16 * 1024

/**
 * `step` on each item in order, yielding the event loop (setImmediate)
 * whenever a slice has run SLICE_MS, the last item's included: what the
 * caller does next starts a turn of its own. Work that never spends a
 * slice (every ordinary batch) gets its results at once rather than as a
 * promise. The clock is read after each item, or, given `weigh` (an
 * item's work, in characters written), only once CLOCK_WEIGHT of it has
 * been done: ordinary calls then cost a size check each.
 */
export function inSlices<I, T> (items: readonly I[], step: (item: I, index: number) => T, weigh?: (result: T) => number): T[] | Promise<T[]> {
  const out: T[] = []
  const sliceStart = performance.now()
  let itemStart = sliceStart
  let weight = 0
  for (let i = 0; i < items.length; i++) {
    const result = step(items[i]!, i)
    out.push(result)
    if (weigh !== undefined && (weight += weigh(result)) < CLOCK_WEIGHT) continue
    weight = 0
    const now = performance.now()
    if (spent(sliceStart, itemStart, now)) return inSlicesFrom(items, step, out, weigh)
    itemStart = now
  }
  return out
}

/**
 * Whether a slice begun at `sliceStart` is spent, the work since the last
 * reading begun at `itemStart`: it ran SLICE_MS, or would with as much
 * work again (the calls of a batch are often alike: two of 15 ms each
 * would otherwise share a slice of 30).
 */
function spent (sliceStart: number, itemStart: number, now: number): boolean {
  return 2 * now - itemStart - sliceStart > SLICE_MS
}

/** The rest of `inSlices` once a slice is spent: the event loop first, then the next slice. */
async function inSlicesFrom<I, T> (items: readonly I[], step: (item: I, index: number) => T, out: T[], weigh?: (result: T) => number): Promise<T[]> {
  for (let done = false; !done;) {
    await new Promise((resolve) => setImmediate(resolve))
    const sliceStart = performance.now()
    let itemStart = sliceStart
    let weight = 0
    done = true
    while (out.length < items.length) {
      const result = step(items[out.length]!, out.length)
      out.push(result)
      if (weigh !== undefined && (weight += weigh(result)) < CLOCK_WEIGHT) continue
      weight = 0
      const now = performance.now()
      if (spent(sliceStart, itemStart, now)) {
        done = false
        break
      }
      itemStart = now
    }
  }
  return out
}
