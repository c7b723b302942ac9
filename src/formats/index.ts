/**
 * The provider formats toolgate speaks (SPEC section 11), by the name of the
 * batch body field that carries each. The route and the engine know only
 * this registry, never a provider: a new format is one module in the list.
 */
import type { TSchema } from '@sinclair/typebox'
import type { CallResult, PolicyMessage } from '../model/result.js'
import { ProblemError } from '../errors.js'
import type { RawCall } from '../model/call.js'
import { anthropic } from './anthropic.js'
import { gemini } from './gemini.js'
import { openaiChat } from './openai-chat.js'
import { openaiResponses } from './openai-responses.js'
import type { DecodedUsage, OfferedTool, ProviderFormat } from './types.js'

const FORMATS: readonly ProviderFormat[] = [openaiChat, openaiResponses, anthropic, gemini]
const BY_NAME = new Map(FORMATS.map((f) => [f.name, f]))

/** Every format's name, in the order the docs list them. */
export const formatNames: readonly string[] = FORMATS.map((f) => f.name)

/** The batch body's provider fields, each with the schema of the fields toolgate reads. */
export const providerBodySchemas: Readonly<Record<string, TSchema>> = Object.fromEntries(FORMATS.map((f) => [f.name, f.schema]))

export function formatNamed (name: string): ProviderFormat | undefined {
  return BY_NAME.get(name)
}

/** A batch body as the route schema lets it through: `calls` or one provider field. */
export interface BatchBodyInput {
  calls?: RawCall[]
  usage?: { inputTokens?: number, outputTokens?: number }
  [field: string]: unknown
}

/** A batch body in toolgate's own terms. */
export interface DecodedBatch {
  calls: RawCall[]
  usage?: { inputTokens?: number, outputTokens?: number }
  /** The provider format the body came in, when it came in one: the answer's `messages` are rendered in it. */
  format?: string
  incomplete: boolean
}

/**
 * Decodes a batch body: exactly one of `calls` or a provider field; usage
 * from the provider object unless the body gives `usage` beside it.
 */
export function decodeBatchBody (body: BatchBodyInput): DecodedBatch {
  const present = FORMATS.filter((f) => body[f.name] !== undefined)
  const given = (body.calls === undefined ? 0 : 1) + present.length
  if (given !== 1) {
    const names = ['calls', ...formatNames].map((n) => `\`${n}\``).join(', ')
    throw new ProblemError('invalid_request', `Send exactly one of ${names}; got ${given === 0 ? 'none' : 'several'}.`)
  }
  if (body.calls !== undefined) return body.usage === undefined ? { calls: body.calls, incomplete: false } : { calls: body.calls, usage: body.usage, incomplete: false }
  const format = present[0]!
  const decoded = format.decode(body[format.name], `/${format.name}`)
  const usage: DecodedUsage | BatchBodyInput['usage'] | undefined = body.usage ?? decoded.usage
  const out: DecodedBatch = { calls: decoded.calls, format: format.name, incomplete: decoded.incomplete }
  if (usage !== undefined) out.usage = usage
  return out
}

/** The answer's `messages` in the batch's format. */
export function renderMessages (format: string, results: readonly CallResult[], policyMessages: readonly PolicyMessage[], calls: readonly RawCall[] = []): unknown[] {
  const f = BY_NAME.get(format)
  if (f === undefined) throw new Error(`unknown provider format ${format}`)
  return f.render(results, policyMessages, calls)
}

/**
 * What tells one request under a batch id from another beyond its calls:
 * the format (it decides `messages`) and whether the response was
 * incomplete (it decides whether anything runs). Plain calls add nothing.
 */
export function requestIdentity (format: string | undefined, incomplete: boolean | undefined): string | undefined {
  if (format === undefined) return undefined
  return incomplete === true ? `${format}:incomplete` : format
}

export type { OfferedTool, ProviderFormat }
