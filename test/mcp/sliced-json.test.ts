import { setImmediate as nextTurn } from 'node:timers/promises'
import t from 'tap'
import { parseJsonInSlices } from '../../src/mcp/sliced-json.js'

const parse = (text: string): Promise<unknown> => parseJsonInSlices(text, async () => await nextTurn(), 5)
/** Text over the size parsed whole, so the sliced path runs. */
const pad = (value: unknown): string => JSON.stringify({ pad: 'x'.repeat(300 * 1024), value, list: Array.from({ length: 2000 }, (_, i) => ({ i, s: `"q\\${i}` })) })

t.test('answers what JSON.parse answers, for large text parsed in slices', async (t) => {
  const cases: unknown[] = [
    { a: [1, -2.5e3, true, false, null, 'é\u0000\n"\\'], b: {}, c: [], d: [[[]]], e: { f: { g: 'h' } } },
    Array.from({ length: 50 }, (_, i) => ({ big: 'y'.repeat(20_000 + i), nested: { deep: Array.from({ length: 100 }, (_, j) => [j, `${j}`]) } })),
    'a plain string',
    12
  ]
  for (const value of cases) {
    const text = pad(value)
    t.same(await parse(text), JSON.parse(text))
  }
  const spaced = JSON.stringify({ tools: Array.from({ length: 5000 }, (_, i) => ({ name: `t${i}`, inputSchema: { type: 'object' } })) }, null, 2)
  t.same(await parse(spaced), JSON.parse(spaced), 'whitespace between tokens')
  const proto = await parse(`{"__proto__": {"polluted": true}, "pad": "${'x'.repeat(300 * 1024)}"}`) as Record<string, unknown>
  t.equal(Object.getPrototypeOf(proto), Object.prototype, 'a __proto__ key is an own property, as with JSON.parse')
  t.same(Object.keys(proto), ['__proto__', 'pad'])
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})

t.test('refuses what JSON.parse refuses', async (t) => {
  const big = 'x'.repeat(300 * 1024)
  for (const bad of [`{"a": "${big}",}`, `["${big}", ]`, `{"a" "${big}"}`, `["${big}"`, `["${big}"] x`, `{"a": [1, 2}, "b": "${big}"}`, `[01, "${big}"]`, `{a: "${big}"}`, `["${big}" "b"]`]) {
    await t.rejects(parse(bad), SyntaxError, bad.replace(big, '…'))
    t.throws(() => JSON.parse(bad), SyntaxError)
  }
})

t.test('a large text is parsed over many turns, each short', async (t) => {
  const text = JSON.stringify({ tools: Array.from({ length: 20_000 }, (_, i) => ({ name: `t${i}`, description: `Tool ${i}`, inputSchema: { type: 'object', properties: { a: { type: 'string' } } } })) })
  let pauses = 0
  const value = await parseJsonInSlices(text, async () => { pauses++; await nextTurn() }, 1) as { tools: unknown[] }
  t.equal(value.tools.length, 20_000)
  t.ok(pauses > 1, `it paused ${pauses} times`)
})
