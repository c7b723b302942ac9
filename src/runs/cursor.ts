import type { RunCursor } from '../store/types.js'

/** A runs-list cursor as clients pass it: opaque base64url text. */
export function encodeRunCursor (cursor: RunCursor): string {
  return Buffer.from(JSON.stringify([cursor.at, cursor.runId])).toString('base64url')
}

/** The cursor a client passed back, or undefined when it is not one this service made. */
export function decodeRunCursor (text: string): RunCursor | undefined {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  if (!Array.isArray(value) || value.length !== 2) return undefined
  const [at, runId] = value as unknown[]
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || typeof runId !== 'string' || runId.length > 128) return undefined
  return { at, runId }
}
