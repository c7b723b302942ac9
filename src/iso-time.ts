/** Milliseconds 0..999 as the last four characters of an ISO time: "000Z".."999Z". */
const MILLIS: readonly string[] = Array.from({ length: 1000 }, (_, ms) => `${String(ms).padStart(3, '0')}Z`)

/** 0000-01-01T00:00:00.000Z and 10000-01-01T00:00:00.000Z: outside, ISO text takes another shape. */
const FIRST_MS = -62_167_219_200_000
const END_MS = 253_402_300_800_000

/**
 * `new Date(ms).toISOString()` without going through V8's date formatter
 * (in C++) for every time: the last millisecond's text is
 * remembered (the calls of a batch mostly start, and get their deadlines,
 * within the same one), and for another millisecond of the same second only
 * the last digits change, from a table. One instance per use, so uses that
 * alternate between seconds do not evict each other.
 */
export class IsoTime {
  #ms = Number.NaN
  #iso = ''
  #second = Number.NaN
  /** "YYYY-MM-DDTHH:MM:SS." of #second. */
  #prefix = ''

  at (time: number): string {
    if (!(time >= FIRST_MS && time < END_MS)) return new Date(time).toISOString()
    // As Date does: a fractional time is cut toward zero.
    const ms = Math.trunc(time)
    if (ms === this.#ms) return this.#iso
    const second = Math.floor(ms / 1000)
    if (second !== this.#second) {
      this.#prefix = new Date(second * 1000).toISOString().slice(0, 20)
      this.#second = second
    }
    this.#ms = ms
    this.#iso = this.#prefix + MILLIS[ms - second * 1000]!
    return this.#iso
  }
}
