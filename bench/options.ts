/** Command-line options of the bench's scripts. */

/** An integer option's value, at least `min`; a clear error naming the option otherwise. */
export function integerOption (name: string, text: string, min: number): number {
  const n = Number(text)
  if (!Number.isInteger(n) || n < min) throw new TypeError(`Expected --${name} to be an integer of at least ${min}, got ${text}`)
  return n
}
