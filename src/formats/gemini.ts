/** Google Gemini: `functionCall` parts in, one user `Content` of `functionResponse` parts out. */
import { Type } from '@sinclair/typebox'
import type { RawCall } from '../model/call.js'
import { nonEmptyString, object, optionalArray, optionalString, shapeError, tokenCount } from './read.js'
import type { Decoded, ProviderFormat } from './types.js'

const open = { additionalProperties: true }
const Tokens = Type.Integer({ minimum: 0 })

const Part = Type.Object({
  functionCall: Type.Optional(Type.Object({
    id: Type.Optional(Type.String({ minLength: 1 })),
    name: Type.String({ minLength: 1 }),
    args: Type.Optional(Type.Object({}, { ...open, description: 'the arguments, passed on as sent' }))
  }, open))
}, { ...open, description: 'only parts holding `functionCall` are read' })

const contentFields = {
  role: Type.Optional(Type.Literal('model')),
  parts: Type.Optional(Type.Array(Part))
}

const schema = Type.Object({
  candidates: Type.Optional(Type.Array(Type.Object({
    content: Type.Optional(Type.Object(contentFields, open)),
    finishReason: Type.Optional(Type.String({ description: 'anything but `STOP` marks the response incomplete; absent counts as `STOP`' }))
  }, open), { description: 'only `candidates[0]` is read' })),
  usageMetadata: Type.Optional(Type.Object({ promptTokenCount: Type.Optional(Tokens), candidatesTokenCount: Type.Optional(Tokens) }, open)),
  ...contentFields
}, { ...open, description: 'A `generateContent` response (`candidates[0]` is used), or a `Content` `{role: "model", parts}`.' })

/** The call id of a function call that came without one: its position among the function calls. */
const generatedId = (index: number): string => `gemini_${index}`

function decode (body: unknown, path: string): Decoded {
  const response = object(body, path)
  if (response.parts !== undefined || response.role !== undefined) return { calls: functionCalls(response, path), incomplete: false }
  if (response.candidates === undefined && response.promptFeedback === undefined) {
    throw shapeError(path, 'must be a generateContent response (with `candidates`) or a Content (with `parts`)')
  }
  // No candidate at all (a blocked prompt): no calls to run.
  const candidates = optionalArray(response.candidates, `${path}/candidates`)
  const decoded: Decoded = { calls: [], incomplete: false }
  if (candidates.length > 0) {
    const candidate = object(candidates[0], `${path}/candidates/0`)
    const finish = optionalString(candidate.finishReason, `${path}/candidates/0/finishReason`)
    decoded.incomplete = finish !== undefined && finish !== 'STOP'
    if (candidate.content !== undefined) decoded.calls = functionCalls(object(candidate.content, `${path}/candidates/0/content`), `${path}/candidates/0/content`)
  }
  const usage = response.usageMetadata
  if (usage !== undefined) {
    const u = object(usage, `${path}/usageMetadata`)
    decoded.usage = { inputTokens: tokenCount(u.promptTokenCount, `${path}/usageMetadata/promptTokenCount`), outputTokens: tokenCount(u.candidatesTokenCount, `${path}/usageMetadata/candidatesTokenCount`) }
  }
  return decoded
}

function functionCalls (content: Record<string, unknown>, path: string): RawCall[] {
  if (content.role !== undefined && content.role !== 'model') throw shapeError(`${path}/role`, 'must be equal to constant "model"')
  const calls: RawCall[] = []
  for (const [i, entry] of optionalArray(content.parts, `${path}/parts`).entries()) {
    const at = `${path}/parts/${i}`
    const part = object(entry, at)
    if (part.functionCall === undefined || part.functionCall === null) continue
    const fc = object(part.functionCall, `${at}/functionCall`)
    const args = fc.args === undefined || fc.args === null ? undefined : object(fc.args, `${at}/functionCall/args`)
    const id = optionalString(fc.id, `${at}/functionCall/id`)
    const name = nonEmptyString(fc.name, `${at}/functionCall/name`)
    // Marked, not told by its shape: a call's own id may well read `gemini_<n>`.
    calls.push(id === undefined || id === '' ? { id: generatedId(calls.length), name, arguments: args, generatedId: true } : { id, name, arguments: args })
  }
  return calls
}

/** The content as JSON when it is JSON, else the text itself. */
function valueOf (content: string): unknown {
  try {
    return JSON.parse(content)
  } catch {
    return content
  }
}

export const gemini: ProviderFormat = {
  name: 'gemini',
  schema,
  decode,
  render: (results, policyMessages, calls) => {
    const parts: unknown[] = results.map((r, i) => {
      const response = r.isError ? { error: valueOf(r.content) } : { output: valueOf(r.content) }
      // A call that came without an id was given one; Gemini is answered without one, as it asked.
      const generated = calls[i]?.id === r.callId && calls[i]?.generatedId === true
      return { functionResponse: generated ? { name: r.name, response } : { id: r.callId, name: r.name, response } }
    })
    for (const p of policyMessages) parts.push({ text: p.content })
    return parts.length === 0 ? [] : [{ role: 'user', parts }]
  },
  toolList: (tools) => tools.length === 0
    ? []
    : [{ functionDeclarations: tools.map((t) => ({ name: t.name, description: t.description, parametersJsonSchema: t.inputSchema })) }]
}
