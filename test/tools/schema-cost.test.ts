/**
 * The schema cost model (src/tools/schema-cost.ts): every limit refuses a
 * schema over it, naming the limit and the JSON pointer, and everyday
 * schemas (recursive ones included) stay within them.
 */
import t from 'tap'
import { DEFAULT_MAX_SCHEMA_BYTES, SCHEMA_LIMITS, schemaCostProblems } from '../../src/tools/schema-cost.js'
import { branchingRefs, manyProperties } from './costly-schemas.js'

const limits = { ...SCHEMA_LIMITS, maxBytes: DEFAULT_MAX_SCHEMA_BYTES }

t.test('an everyday schema, a recursive tree and a JSON-value schema are within every limit', async (t) => {
  t.same(schemaCostProblems({ type: 'object', properties: { q: { type: 'string', maxLength: 100 }, n: { type: 'integer' } }, required: ['q'] }, limits), [])
  const tree = { $defs: { node: { type: 'object', properties: { label: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } } }, $ref: '#/$defs/node' }
  t.same(schemaCostProblems(tree, limits), [])
  const json = { $anchor: 'v', anyOf: [{ type: ['string', 'number', 'boolean', 'null'] }, { type: 'array', items: { $ref: '#v' } }, { type: 'object', additionalProperties: { $ref: '#v' } }] }
  t.same(schemaCostProblems(json, limits), [])
  t.same(schemaCostProblems(manyProperties(1000), limits), [], 'a thousand properties are allowed')
})

t.test('a schema larger than TOOLGATE_MAX_SCHEMA_BYTES is refused, naming the setting', async (t) => {
  const big = { type: 'object', description: 'x'.repeat(2000) }
  t.match(schemaCostProblems(big, { ...limits, maxBytes: 1024 }), [/^\/inputSchema: is \d+ bytes, over the limit of 1024 \(TOOLGATE_MAX_SCHEMA_BYTES\)$/])
})

t.test('1,600 properties, which overflow the stack of the validator Ajv generates, are refused', async (t) => {
  t.match(schemaCostProblems(manyProperties(1600), limits), [/^\/inputSchema\/properties: the schema names more than 1000 properties/])
  const spread = { type: 'object', properties: { a: manyProperties(600), b: manyProperties(600) } }
  t.match(schemaCostProblems(spread, limits), [/^\/inputSchema\/properties\/b\/properties|^\/inputSchema\/properties\/a\/properties: the schema names more than 1000/], 'counted over the whole schema')
})

t.test('nested anyOf through $ref, exponential once expanded, is refused at the pointer where it passes the limit', async (t) => {
  t.same(schemaCostProblems(branchingRefs(8), limits), [], '2^8 expanded subschemas are fine')
  t.match(schemaCostProblems(branchingRefs(8, 4), limits), [/^\/inputSchema\/\$defs\/a\d+(\/anyOf\/\d+)?: expands to more than 10000 subschemas through \$ref and branching, the limit$/], '4^8 are not')
  t.match(schemaCostProblems(branchingRefs(22), limits), [/^\/inputSchema\/\$defs\/a\d+(\/anyOf\/\d+)?: nests subschemas 33 deep through \$ref/], "the issue's 22 levels are refused by their depth already")
})

t.test('a $ref cycle that never moves into the value is refused; one through properties or items is not', async (t) => {
  t.match(schemaCostProblems({ $defs: { a: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }, limits), [/^\/inputSchema\/\$defs\/a: a \$ref cycle applies the schema to the same value again without end$/])
  t.match(schemaCostProblems({ $defs: { a: { anyOf: [{ $ref: '#/$defs/b' }] }, b: { allOf: [{ $ref: '#' }] } }, $ref: '#/$defs/a' }, limits), [/a \$ref cycle/])
  t.same(schemaCostProblems({ type: 'object', properties: { next: { $ref: '#' } } }, limits), [])
})

t.test('nesting, branching and references beyond the limits are refused with their pointer', async (t) => {
  let deep: Record<string, unknown> = { type: 'string' }
  for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { x: deep } }
  t.match(schemaCostProblems(deep, limits), [/^\/inputSchema(\/properties\/x)+: nests subschemas 33 deep, over the limit of 32$/])
  const branches = { anyOf: Array.from({ length: 65 }, (_, i) => ({ const: i })) }
  t.same(schemaCostProblems(branches, limits), ['/inputSchema/anyOf: has 65 branches, over the limit of 64'])
  t.same(schemaCostProblems({ $ref: 'http://127.0.0.1:1/schema.json' }, limits), ['/inputSchema/$ref: only references inside the schema (starting with #) are supported'])
  t.same(schemaCostProblems({ $dynamicRef: '#meta' }, limits), ['/inputSchema/$dynamicRef: dynamic references are not supported; use $ref'])
  const chain: Record<string, unknown> = {}
  for (let i = 0; i < 40; i++) chain[`d${i}`] = { $ref: `#/$defs/d${i + 1}` }
  chain.d40 = { type: 'string' }
  t.match(schemaCostProblems({ $defs: chain, $ref: '#/$defs/d0' }, limits), [/nests subschemas 33 deep through \$ref, over the limit of 32$/])
})

t.test('a pointer escapes ~ and / in property names', async (t) => {
  const schema = { type: 'object', properties: { 'a/b~c': { anyOf: Array.from({ length: 65 }, () => ({})) } } }
  t.same(schemaCostProblems(schema, limits), ['/inputSchema/properties/a~1b~0c/anyOf: has 65 branches, over the limit of 64'])
})
