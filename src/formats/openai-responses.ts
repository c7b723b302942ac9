/** OpenAI Responses: `output[]` items of type `function_call` in, `function_call_output` items out. */
import { Type } from '@sinclair/typebox'
import type { RawCall } from '../model/call.js'
import { array, nonEmptyString, object, optionalString, shapeError, tokenCount } from './read.js'
import { isObject } from '../model/json.js'
import type { Decoded, ProviderFormat } from './types.js'

const open = { additionalProperties: true }
const Tokens = Type.Integer({ minimum: 0 })

const OutputItem = Type.Object({
  type: Type.String({ description: '`function_call` items are run; `custom_tool_call` items are answered, not run' }),
  call_id: Type.Optional(Type.String({ minLength: 1 })),
  name: Type.Optional(Type.String({ minLength: 1 })),
  arguments: Type.Optional(Type.String({ description: 'JSON text, passed on as sent' })),
  status: Type.Optional(Type.String({ description: '`incomplete` marks the response incomplete' }))
}, open)
const Output = Type.Array(OutputItem)

const schema = Type.Union([
  Type.Object({
    output: Output,
    status: Type.Optional(Type.String({ description: '`incomplete` marks the response incomplete' })),
    usage: Type.Optional(Type.Union([Type.Object({ input_tokens: Type.Optional(Tokens), output_tokens: Type.Optional(Tokens) }, open), Type.Null()]))
  }, open),
  Output
], { description: 'A Responses API response, or its `output` array.' })

function decode (body: unknown, path: string): Decoded {
  if (Array.isArray(body)) return functionCalls(body, path)
  const response = object(body, path)
  const decoded = functionCalls(array(response.output, `${path}/output`), `${path}/output`)
  if (optionalString(response.status, `${path}/status`) === 'incomplete') decoded.incomplete = true
  if (isObject(response.usage)) {
    decoded.usage = { inputTokens: tokenCount(response.usage.input_tokens, `${path}/usage/input_tokens`), outputTokens: tokenCount(response.usage.output_tokens, `${path}/usage/output_tokens`) }
  } else if (response.usage !== undefined && response.usage !== null) {
    throw shapeError(`${path}/usage`, 'must be object')
  }
  return decoded
}

function functionCalls (output: unknown[], path: string): Decoded {
  const calls: RawCall[] = []
  let incomplete = false
  for (const [i, entry] of output.entries()) {
    const at = `${path}/${i}`
    const item = object(entry, at)
    if (item.type === 'custom_tool_call') {
      // Not run, but answered (`unsupported_call_type`): the API refuses a conversation that leaves a call unanswered.
      calls.push({ id: nonEmptyString(item.call_id, `${at}/call_id`), name: nonEmptyString(item.name, `${at}/name`), arguments: item.input, kind: 'custom' })
      continue
    }
    if (item.type !== 'function_call') continue
    calls.push({ id: nonEmptyString(item.call_id, `${at}/call_id`), name: nonEmptyString(item.name, `${at}/name`), arguments: optionalString(item.arguments, `${at}/arguments`) })
    // The output array alone has no response status: an item still being written says the same.
    if (optionalString(item.status, `${at}/status`) === 'incomplete') incomplete = true
  }
  return { calls, incomplete }
}

export const openaiResponses: ProviderFormat = {
  name: 'openaiResponses',
  schema,
  decode,
  render: (results, policyMessages, calls) => [
    ...results.map((r, i) => ({ type: calls[i]?.kind === 'custom' ? 'custom_tool_call_output' : 'function_call_output', call_id: r.callId, output: r.content })),
    ...policyMessages.map((p) => ({ role: 'system', content: p.content }))
  ],
  // strict: false because the Responses API otherwise defaults to strict schemas, which most tools' schemas are not.
  toolList: (tools) => tools.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.inputSchema, strict: false }))
}
