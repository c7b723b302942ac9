/**
 * JSON text of a string, exactly as JSON.stringify writes it. A string with
 * nothing to escape (no control character, quote, backslash or surrogate) is
 * only quoted; anything else, and any long string, goes to JSON.stringify.
 *
 * For the short ids and names written on every request (run, batch and call
 * ids, tool names, request ids): JSON.stringify costs a call into the
 * engine's runtime and a buffer of its own each time, several times the work
 * of this scan for a string of a few dozen characters.
 */
export function jsonString (text: string): string {
  return text.length > MAX_SCANNED || NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`
}

/**
 * What JSON.stringify escapes: control characters, `"`, `\\`, and surrogates
 * (a lone one is escaped; pairs are left to JSON.stringify too). A regular
 * expression rather than a charCodeAt loop: strings reach here in several
 * internal representations, which makes a loop's `charCodeAt` a megamorphic
 * property load on every character.
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/

/** Longer strings are JSON.stringify's: its own scan is faster than this one's there. */
const MAX_SCANNED = 256

/** JSON text of a number as JSON.stringify writes it: `null` for NaN and ±Infinity. */
export function jsonNumber (value: number): string {
  return Number.isFinite(value) ? String(value) : 'null'
}
