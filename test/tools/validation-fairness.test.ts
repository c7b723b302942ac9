/**
 * The validation thread takes owners in turn (src/tools/validation-thread.ts):
 * a tenant that sends costly calls by the dozen waits behind its own, and
 * another tenant's call waits for at most one of them.
 */
import t from 'tap'
import { ValidationThread } from '../../src/tools/validation-thread.js'

/** Each item matches only the enum's last value: 4,000 × 20,000 comparisons, far past a 20 ms budget. */
const costly = { type: 'array', items: { enum: Array.from({ length: 20_000 }, (_, i) => `v${i}`) } }
const costlyData = Array.from({ length: 4_000 }, () => 'v19999')
const plain = { type: 'object', properties: { n: { type: 'integer' } } }

t.test('a tenant\'s backlog of costly validations does not hold another tenant\'s validation', async (t) => {
  const thread = new ValidationThread()
  t.teardown(() => thread.close())
  // Started and warm: the first validation starts the worker, which the order below should not depend on.
  t.same(await thread.validate(1, plain, { n: 1 }, 1_000, true, 'warm-up'), { valid: true, value: { n: 1 } })
  const order: string[] = []
  const hostile = Array.from({ length: 4 }, async (_, i) => {
    const verdict = await thread.validate(2, costly, costlyData, 20, true, 'tenant-a')
    order.push(`a${i + 1}`)
    return verdict
  })
  const other = thread.validate(1, plain, { n: 2 }, 1_000, true, 'tenant-b').then((verdict) => {
    order.push('b')
    return verdict
  })
  t.same(await other, { valid: true, value: { n: 2 } })
  for (const verdict of await Promise.all(hostile)) t.match(verdict, { valid: false, errors: [{ message: /took longer than 20 ms/ }] })
  // a1 is taken at once; a2 came before b, and so may go before it. In arrival order b would be last.
  t.ok(order.indexOf('b') <= 2, `the other tenant's validation waits for at most one of the tenant's beyond the one running: ${order.join(', ')}`)
  t.same(order.filter((o) => o !== 'b'), ['a1', 'a2', 'a3', 'a4'], 'the tenant\'s own in their order')
})

t.test('validations of one owner keep their order', async (t) => {
  const thread = new ValidationThread()
  t.teardown(() => thread.close())
  const order: number[] = []
  await Promise.all(Array.from({ length: 6 }, async (_, i) => {
    await thread.validate(1, plain, { n: i }, 1_000, true, i % 2 === 0 ? 'x' : 'y')
    order.push(i)
  }))
  t.same(order, [0, 1, 2, 3, 4, 5], 'two owners alternating: taken alternately, each in its order')
})
