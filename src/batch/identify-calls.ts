import { type CanonicalText, canonicalJson, canonicalText } from '../model/json.js'
import { sha256 } from '../model/sha256.js'
import { inSlices } from '../model/slices.js'
import type { RawCall } from '../model/call.js'

/** A batch's calls as identified on arrival. */
export interface IdentifiedCalls {
  /** Tells a resend of these calls from other calls under the same batch id. */
  requestHash: string
  /** Each call's raw arguments (`arguments ?? null`) as canonical text. */
  argumentTexts: CanonicalText[]
}

/**
 * Identifies a batch's calls, so a reused batch id with other calls is
 * caught: a hash of the JCS form of `[[id, name, arguments ?? null], ...]`,
 * written from each call's canonical arguments, which preparation measures
 * then instead of serializing the arguments once more. `identity`, when
 * given, is the rest of what tells the request apart (its provider format).
 * Each call's arguments are written in slices of the event loop (a batch
 * of large arguments holds it for one call's at a time): a promise only
 * when they took more than a slice.
 */
export function identifyCalls (calls: readonly RawCall[], identity?: string): IdentifiedCalls | Promise<IdentifiedCalls> {
  const texts = inSlices(calls, argumentText, textLength)
  return texts instanceof Promise ? texts.then((t) => identified(calls, t, identity)) : identified(calls, texts, identity)
}

function argumentText (call: RawCall): CanonicalText {
  return canonicalText(call.arguments ?? null)
}

function textLength (text: CanonicalText): number {
  return text.text.length
}

function identified (calls: readonly RawCall[], argumentTexts: CanonicalText[], identity: string | undefined): IdentifiedCalls {
  let text = '['
  for (const [i, c] of calls.entries()) {
    text += `${i > 0 ? ',' : ''}[${canonicalJson(c.id)},${canonicalJson(c.name)},${argumentTexts[i]!.text}]`
  }
  text += identity === undefined ? ']' : `,${canonicalJson(identity)}]`
  return { requestHash: sha256(text, 'base64url').slice(0, 22), argumentTexts }
}
