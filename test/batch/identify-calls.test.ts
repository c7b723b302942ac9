import { createHash } from 'node:crypto'
import fc from 'fast-check'
import t from 'tap'
import { identifyCalls } from '../../src/batch/identify-calls.js'
import { canonicalJson } from '../../src/model/json.js'
import { runs, seeded } from '../seed.js'

// What the request hash has always been: stored hashes (in Redis too) must keep matching resends.
const hashOf = (calls: Array<{ id: string, name: string, arguments?: unknown }>): string =>
  createHash('sha256').update(canonicalJson(calls.map((c) => [c.id, c.name, c.arguments ?? null]))).digest('base64url').slice(0, 22)


const call = fc.record({
  id: fc.string({ unit: 'binary' }),
  name: fc.string({ unit: 'binary' }),
  arguments: fc.option(fc.oneof(fc.string({ unit: 'binary' }), fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 }))), { nil: undefined })
}, { requiredKeys: ['id', 'name'] })

t.test('the request hash is SHA-256 (base64url, 22 characters) of the JCS form of [[id, name, arguments ?? null], ...]', async (t) => {
  await fc.assert(fc.asyncProperty(fc.array(call, { maxLength: 6 }), async (calls) => {
    const { requestHash, argumentTexts } = await identifyCalls(calls)
    return requestHash === hashOf(calls) && argumentTexts.every(({ text }, i) => text === canonicalJson(calls[i]!.arguments ?? null)) &&
      argumentTexts.length === calls.length
  }), seeded(t, { numRuns: runs(300, 1000) }))
  t.equal((await identifyCalls([])).requestHash, hashOf([]))
})

t.test('calls that differ in order, id, name or arguments hash apart; key order inside the arguments does not', async (t) => {
  const a = { id: 'c1', name: 'look', arguments: { x: 1, y: 2 } }
  const b = { id: 'c2', name: 'look', arguments: { x: 1 } }
  const hash = async (calls: Parameters<typeof identifyCalls>[0]): Promise<string> => (await identifyCalls(calls)).requestHash
  const base = await hash([a, b])
  t.not(await hash([b, a]), base)
  t.not(await hash([{ ...a, id: 'c3' }, b]), base)
  t.not(await hash([{ ...a, name: 'peek' }, b]), base)
  t.not(await hash([{ ...a, arguments: { x: 1, y: 3 } }, b]), base)
  t.equal(await hash([{ ...a, arguments: { y: 2, x: 1 } }, b]), base)
})
