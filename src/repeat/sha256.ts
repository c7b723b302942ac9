import crypto from 'node:crypto'

type Encoding = 'hex' | 'base64url'

// crypto.hash (Node 20.12+, 21.7+) hashes a small string about three times
// faster than createHash: no Hash object per call. The engines field allows
// older 20.x, hence the fallback.
const oneShot = typeof crypto.hash === 'function' ? crypto.hash : null

/** SHA-256 of a UTF-8 string, as hex or base64url. */
export function sha256 (text: string, encoding: Encoding): string {
  return oneShot !== null ? oneShot('sha256', text, encoding) : crypto.createHash('sha256').update(text, 'utf8').digest(encoding)
}
