import { hash } from 'node:crypto'

type Encoding = 'hex' | 'base64url'

/** SHA-256 of a UTF-8 string, as hex or base64url: one call, no Hash object made per call. */
export function sha256 (text: string, encoding: Encoding): string {
  return hash('sha256', text, encoding)
}
