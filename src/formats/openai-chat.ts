/** OpenAI Chat Completions: `choices[0].message.tool_calls` in, `role: "tool"` messages out. */
import { Type } from '@sinclair/typebox'
import type { RawCall } from '../model/call.js'
import { array, nonEmptyString, object, optionalArray, optionalString, shapeError, string, tokenCount } from './read.js'
import { isObject } from '../model/json.js'
import type { Decoded, ProviderFormat } from './types.js'

const open = { additionalProperties: true }
const Tokens = Type.Integer({ minimum: 0 })

const ToolCall = Type.Object({
  id: Type.String({ minLength: 1 }),
  type: Type.Optional(Type.String({ description: '`function` calls are run; calls of other types (`custom`) are answered, not run' })),
  function: Type.Optional(Type.Object({
    name: Type.String({ minLength: 1 }),
    arguments: Type.Optional(Type.String({ description: 'JSON text, passed on as sent' }))
  }, open))
}, open)

const messageFields = {
  role: Type.Optional(Type.Literal('assistant')),
  tool_calls: Type.Optional(Type.Union([Type.Array(ToolCall), Type.Null()]))
}

const schema = Type.Object({
  choices: Type.Optional(Type.Array(Type.Object({
    message: Type.Object(messageFields, open),
    finish_reason: Type.Optional(Type.Union([Type.String({ description: '`length` and `content_filter` mark the response incomplete' }), Type.Null()]))
  }, open), { minItems: 1, description: 'only `choices[0]` is read' })),
  usage: Type.Optional(Type.Union([Type.Object({ prompt_tokens: Type.Optional(Tokens), completion_tokens: Type.Optional(Tokens) }, open), Type.Null()])),
  ...messageFields
}, { ...open, description: 'A Chat Completions response (`choices[0]` is used), or its assistant `message`.' })

const INCOMPLETE = new Set(['length', 'content_filter'])

function decode (body: unknown, path: string): Decoded {
  const response = object(body, path)
  if (response.choices === undefined) return { calls: toolCalls(response, path), incomplete: false }
  const choices = array(response.choices, `${path}/choices`)
  if (choices.length === 0) throw shapeError(`${path}/choices`, 'must NOT have fewer than 1 items')
  const choice = object(choices[0], `${path}/choices/0`)
  const finish = optionalString(choice.finish_reason, `${path}/choices/0/finish_reason`)
  const decoded: Decoded = {
    calls: toolCalls(object(choice.message, `${path}/choices/0/message`), `${path}/choices/0/message`),
    incomplete: finish !== undefined && INCOMPLETE.has(finish)
  }
  if (isObject(response.usage)) {
    decoded.usage = { inputTokens: tokenCount(response.usage.prompt_tokens, `${path}/usage/prompt_tokens`), outputTokens: tokenCount(response.usage.completion_tokens, `${path}/usage/completion_tokens`) }
  } else if (response.usage !== undefined && response.usage !== null) {
    throw shapeError(`${path}/usage`, 'must be object')
  }
  return decoded
}

function toolCalls (message: Record<string, unknown>, path: string): RawCall[] {
  if (message.role === undefined && message.tool_calls === undefined) {
    throw shapeError(path, 'must be a Chat Completions response (with `choices`) or its assistant message (with `role`)')
  }
  if (message.role !== undefined && message.role !== 'assistant') throw shapeError(`${path}/role`, 'must be equal to constant "assistant"')
  const calls: RawCall[] = []
  for (const [i, item] of optionalArray(message.tool_calls, `${path}/tool_calls`).entries()) {
    const at = `${path}/tool_calls/${i}`
    const call = object(item, at)
    if (call.type !== undefined && string(call.type, `${at}/type`) !== 'function') {
      calls.push(unsupportedCall(call, at))
      continue
    }
    const fn = object(call.function, `${at}/function`)
    calls.push({ id: nonEmptyString(call.id, `${at}/id`), name: nonEmptyString(fn.name, `${at}/function/name`), arguments: optionalString(fn.arguments, `${at}/function/arguments`) })
  }
  return calls
}

/**
 * A tool call of another type (`custom`, or one to come): toolgate does not
 * run it, but answers it (`unsupported_call_type`), since the API refuses a
 * conversation that leaves a tool call unanswered.
 */
function unsupportedCall (call: Record<string, unknown>, at: string): RawCall {
  const kind = (call.type as string).slice(0, 64)
  const detail = isObject(call[kind]) ? call[kind] : {}
  const name = typeof detail.name === 'string' && detail.name !== '' ? detail.name : kind
  return { id: nonEmptyString(call.id, `${at}/id`), name, arguments: detail.input, kind }
}

export const openaiChat: ProviderFormat = {
  name: 'openaiChat',
  schema,
  decode,
  render: (results, policyMessages) => [
    ...results.map((r) => ({ role: 'tool', tool_call_id: r.callId, content: r.content })),
    ...policyMessages.map((p) => ({ role: 'system', content: p.content }))
  ],
  toolList: (tools) => tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.inputSchema } }))
}
