import { sha256 } from '../model/sha256.js'
import { canonicalJson } from '../model/json.js'

const FINGERPRINT_PATTERN = /^[0-9a-f]{64}$/

/** How many hex characters of a fingerprint telemetry may show. */
const FINGERPRINT_PREFIX_LENGTH = 12

/**
 * The exact-repeat fingerprint of a call (SPEC section 6): SHA-256 hex of the
 * JCS form of `[toolName, args]`, so the name and the arguments can never run
 * into each other. `args` is the prepared arguments, or, for a call whose
 * arguments did not parse, the raw argument string, which is hashed as a JSON
 * string value and therefore never equals an object with the same text.
 */
export function fingerprint (toolName: string, args: unknown): string {
  checkToolName(toolName)
  return fingerprintOfText(toolName, canonicalJson(args))
}

/**
 * `fingerprint`, given the arguments' canonicalJson text already: the JCS
 * form of `[toolName, args]` is that text with the name before it.
 */
export function fingerprintOfText (toolName: string, canonicalArgs: string): string {
  checkToolName(toolName)
  return sha256(`[${JSON.stringify(toolName)},${canonicalArgs}]`, 'hex')
}

function checkToolName (toolName: unknown): void {
  if (typeof toolName !== 'string') {
    throw new TypeError(`Expected \`toolName\` to be a string, got ${typeof toolName}`)
  }
}

/** The only form of a fingerprint telemetry may show: its first 12 hex characters. */
export function fingerprintPrefix (fp: string): string {
  if (typeof fp !== 'string' || !FINGERPRINT_PATTERN.test(fp)) {
    throw new TypeError('Expected `fp` to be a SHA-256 hex fingerprint')
  }
  return fp.slice(0, FINGERPRINT_PREFIX_LENGTH)
}
