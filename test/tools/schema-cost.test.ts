/**
 * The schema cost model (src/tools/schema-cost.ts): every limit refuses a
 * schema over it, naming the limit and the JSON pointer, and everyday
 * schemas (recursive ones included) stay within them.
 */
import t from 'tap'
import { DEFAULT_MAX_SCHEMA_BYTES, SCHEMA_LIMITS, schemaCost, schemaCostProblems } from '../../src/tools/schema-cost.js'
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

t.test('patterns are weighed before they are compiled: each distinct one once, refused past the instruction limit', async (t) => {
  const limits = { ...SCHEMA_LIMITS, maxBytes: 256 * 1024 }
  const patternProperties: Record<string, unknown> = {}
  for (let i = 0; i < 1000; i++) patternProperties[`^k${i}[a-z]{0,200}$`] = { type: 'string' }
  t.match(schemaCostProblems({ type: 'object', patternProperties }, limits), [/^\/inputSchema\/patternProperties\/\^k24\[a-z\]\{0,200\}\$: the schema's patterns are too costly: they compile to more than 10000 instructions, the limit$/])
  const same = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`p${i}`, { type: 'string', pattern: '^[a-z]{0,200}$' }]))
  t.same(schemaCostProblems({ type: 'object', properties: same }, limits), [], 'one pattern used 500 times is compiled once')
  t.same(schemaCostProblems({ type: 'string', pattern: '^[a-z0-9-]{1,63}(\\.[a-z0-9-]{1,63})*$' }, limits), [], 'an ordinary hostname pattern')
})

t.test('a schema\'s weight counts enum values, consts and patterns per use, and is unbounded for branching recursion', async (t) => {
  const limits = { ...SCHEMA_LIMITS, maxBytes: 256 * 1024 }
  const countries = Array.from({ length: 250 }, (_, i) => `C${i}`)
  const ordinary = schemaCost({ type: 'object', properties: { country: { enum: countries }, n: { type: 'integer' } } }, limits)
  t.same(ordinary.problems, [], 'a 250-value enum is no problem')
  t.ok(ordinary.weight > 250 && ordinary.weight < 1000, `and weighs ${ordinary.weight}`)
  const values = Array.from({ length: 20_000 }, (_, i) => `v${i}`)
  t.ok(schemaCost({ type: 'array', items: { enum: values } }, limits).weight > 20_000, '20,000 values weigh more than 20,000')
  const shared = { $defs: { e: { enum: values } }, allOf: [{ $ref: '#/$defs/e' }, { $ref: '#/$defs/e' }, { $ref: '#/$defs/e' }] }
  t.ok(schemaCost(shared, limits).weight > 60_000, 'a definition counts once per reference to it')
  t.equal(schemaCost({ type: 'array', items: { $ref: '#' } }, limits).weight < 10, true, 'a list of lists: one reference back, bounded')
  t.equal(schemaCost({ type: 'array', items: { $ref: '#' }, contains: { $ref: '#' } }, limits).weight, Infinity, 'two references back into the same items: each level validated once per path')
  const json = { $anchor: 'v', anyOf: [{ type: ['string', 'number', 'boolean', 'null'] }, { type: 'array', items: { $ref: '#v' } }, { type: 'object', additionalProperties: { $ref: '#v' } }] }
  t.ok(schemaCost(json, limits).weight < 20, 'a JSON value schema: one reference into items and one into properties never meet')
  const pair = { type: 'object', properties: { left: { $ref: '#' }, right: { $ref: '#' } } }
  t.ok(schemaCost(pair, limits).weight < 20, 'a binary tree: two named properties, one reference each')
})
