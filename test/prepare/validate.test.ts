import type { ErrorObject } from 'ajv'
import t from 'tap'
import { describeErrors, validateArguments } from '../../src/prepare/validate.js'
import { makeTool } from './tool-fixture.js'

const tool = makeTool({
  name: 'build',
  inputSchema: {
    type: 'object',
    properties: {
      x: { type: 'integer' },
      kind: { type: 'string', default: 'wall' },
      style: { type: 'object', properties: { color: { type: 'string', default: 'red' } } },
      email: { type: 'string', format: 'email' }
    },
    required: ['x'],
    additionalProperties: false
  }
})

t.test('valid arguments pass with the schema defaults filled in', async (t) => {
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['a missing default is filled', { x: 1 }, { x: 1, kind: 'wall' }],
    ['a given value is kept', { x: 1, kind: 'door' }, { x: 1, kind: 'door' }],
    ['a nested default is filled', { x: 1, style: {} }, { x: 1, kind: 'wall', style: { color: 'red' } }],
    ['a format is checked and passes', { x: 1, email: 'a@example.com' }, { x: 1, kind: 'wall', email: 'a@example.com' }]
  ]
  for (const [name, args, expected] of cases) {
    const before = structuredClone(args)
    const result = await validateArguments(tool, args)
    t.ok(result.ok, name)
    if (result.ok) t.strictSame(result.value, expected, name)
    t.strictSame(args, before, `${name}: the caller's object is not mutated`)
  }
})

t.test('invalid arguments are refused with the path and the error, never the value', async (t) => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a wrong type', { x: 'hunter2' }, /\/x must be integer/],
    ['a missing required property', { kind: 'hunter2' }, /\/ must have required property 'x'/],
    ['an unexpected property', { x: 1, colour: 'hunter2' }, /must NOT have additional properties: "colour"/],
    ['a nested wrong type', { x: 1, style: { color: 5 } }, /\/style\/color must be string/],
    ['a bad format', { x: 1, email: 'hunter2' }, /\/email must match format "email"/]
  ]
  for (const [name, args, message] of cases) {
    const result = await validateArguments(tool, args)
    t.equal(result.ok, false, name)
    if (result.ok) continue
    t.equal(result.reason, 'invalid_arguments', name)
    t.match(result.message, message, name)
    t.notMatch(result.message, /hunter2/, `${name}: the value is not echoed`)
  }
})

t.test('in place validation fills the defaults into the given object', async (t) => {
  const args = { x: 1 }
  const result = await validateArguments(tool, args, { inPlace: true })
  t.equal(result.ok && result.value, args)
  t.strictSame(args, { x: 1, kind: 'wall' })
})

t.test('at most five schema errors are described', (t) => {
  const errors = Array.from({ length: 7 }, (_, i) => ({
    instancePath: `/p${i}`, schemaPath: '#', keyword: 'type', params: {}, message: 'must be integer'
  })) as ErrorObject[]
  const text = describeErrors(errors)
  t.equal(text.split('; ').length, 6)
  t.match(text, /^\/p0 must be integer; .*\/p4 must be integer; and 2 more$/)
  t.notMatch(text, /\/p5/)
  t.equal(describeErrors(null), 'arguments do not match the schema')
  t.end()
})
