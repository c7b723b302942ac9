/** Small statistics over samples. */

export function median (xs: readonly number[]): number {
  return percentile(xs, 50)
}

/** Nearest-rank percentile; NaN for no samples. */
export function percentile (xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN
  const sorted = [...xs].sort((a, b) => a - b)
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!
}

export const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0)

/** Rounds to `digits` significant figures, for the table and the JSON alike. */
export function sig (x: number, digits = 3): number {
  if (!Number.isFinite(x) || x === 0) return x
  return Number(x.toPrecision(digits))
}

/** Rotates a list by `by`, so that each round starts with a different target. */
export function rotate<T> (xs: readonly T[], by: number): T[] {
  const n = xs.length
  return xs.map((_, i) => xs[(i + by) % n]!)
}
