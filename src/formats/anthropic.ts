/** Anthropic Messages: `tool_use` content blocks in, one user message of `tool_result` blocks out. */
import { Type } from '@sinclair/typebox'
import type { RawCall } from '../model/call.js'
import { isObject } from '../model/json.js'
import { nonEmptyString, object, optionalString, shapeError, tokenCount } from './read.js'
import type { Decoded, ProviderFormat } from './types.js'

const open = { additionalProperties: true }
const Tokens = Type.Integer({ minimum: 0 })

const Block = Type.Object({
  type: Type.String({ description: 'only `tool_use` blocks are read' }),
  id: Type.Optional(Type.String({ minLength: 1 })),
  name: Type.Optional(Type.String({ minLength: 1 })),
  input: Type.Optional(Type.Object({}, { ...open, description: 'the arguments, passed on as sent' }))
}, open)

const schema = Type.Object({
  role: Type.Optional(Type.Literal('assistant')),
  content: Type.Union([Type.Array(Block), Type.String()]),
  stop_reason: Type.Optional(Type.Union([Type.String({ description: '`max_tokens`, `refusal` and `model_context_window_exceeded` mark the response incomplete' }), Type.Null()])),
  usage: Type.Optional(Type.Union([Type.Object({ input_tokens: Type.Optional(Tokens), output_tokens: Type.Optional(Tokens) }, open), Type.Null()]))
}, { ...open, description: 'A Messages API response, or an assistant message `{role, content}`.' })

/** Cut short (the token budget, the context window) or refused: the tool calls may be half-written. */
const INCOMPLETE = new Set(['max_tokens', 'refusal', 'model_context_window_exceeded'])

function decode (body: unknown, path: string): Decoded {
  const message = object(body, path)
  if (message.role !== undefined && message.role !== 'assistant') throw shapeError(`${path}/role`, 'must be equal to constant "assistant"')
  const stop = optionalString(message.stop_reason, `${path}/stop_reason`)
  const decoded: Decoded = { calls: toolUses(message.content, `${path}/content`), incomplete: stop !== undefined && INCOMPLETE.has(stop) }
  if (isObject(message.usage)) {
    decoded.usage = { inputTokens: tokenCount(message.usage.input_tokens, `${path}/usage/input_tokens`), outputTokens: tokenCount(message.usage.output_tokens, `${path}/usage/output_tokens`) }
  } else if (message.usage !== undefined && message.usage !== null) {
    throw shapeError(`${path}/usage`, 'must be object')
  }
  return decoded
}

function toolUses (content: unknown, path: string): RawCall[] {
  // A message's content may be plain text: no tool calls.
  if (typeof content === 'string') return []
  if (!Array.isArray(content)) throw shapeError(path, 'must be array')
  const calls: RawCall[] = []
  for (const [i, entry] of content.entries()) {
    const at = `${path}/${i}`
    const block = object(entry, at)
    if (block.type !== 'tool_use') continue
    const input = block.input === undefined ? undefined : object(block.input, `${at}/input`)
    calls.push({ id: nonEmptyString(block.id, `${at}/id`), name: nonEmptyString(block.name, `${at}/name`), arguments: input })
  }
  return calls
}

export const anthropic: ProviderFormat = {
  name: 'anthropic',
  schema,
  decode,
  render: (results, policyMessages) => {
    const content: unknown[] = results.map((r) => r.isError
      ? { type: 'tool_result', tool_use_id: r.callId, content: r.content, is_error: true }
      : { type: 'tool_result', tool_use_id: r.callId, content: r.content })
    for (const p of policyMessages) content.push({ type: 'text', text: p.content })
    // Anthropic refuses a message with no content: nothing to say is no message.
    return content.length === 0 ? [] : [{ role: 'user', content }]
  },
  toolList: (tools) => tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }))
}
