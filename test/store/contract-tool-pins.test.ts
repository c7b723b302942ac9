import { randomUUID } from 'node:crypto'
import t from 'tap'
import { RedisToolPins } from '../../src/store/redis-tool-pins.js'
import { MemoryToolPins, type ToolPin, type ToolPins } from '../../src/store/tool-pins.js'
import { REDIS_URL, deleteByPrefix } from './harness.js'

type Tap = { teardown: (fn: () => unknown) => void }

/** Two clients of the same pins: two replicas on Redis, one process's pins twice in memory. */
const stores: Array<{ name: string, open: (t: Tap) => { a: ToolPins, b: ToolPins } }> = [
  {
    name: 'memory',
    open: () => {
      const pins = new MemoryToolPins()
      return { a: pins, b: pins }
    }
  },
  {
    name: 'redis',
    open: (t) => {
      const prefix = `toolgate-test:${randomUUID()}:`
      const a = new RedisToolPins({ url: REDIS_URL, prefix })
      const b = new RedisToolPins({ url: REDIS_URL, prefix })
      t.teardown(async () => {
        await a.close()
        await b.close()
        await deleteByPrefix(prefix)
      })
      return { a, b }
    }
  }
]

const pin = (hash: string): ToolPin => ({ hash, definition: { name: hash, inputSchema: { type: 'object' } }, pinnedAt: 1 })

for (const store of stores) {
  t.test(`${store.name}: the first pins of a server are taken once, whoever asks first; later ones answer them`, async (t) => {
    const { a, b } = store.open(t)
    t.same(await a.pinsOf('srv'), new Map(), 'no pins yet')
    const [first, second] = await Promise.all([
      a.pinFirst('srv', new Map([['x', pin('x1')], ['y', pin('y1')]])),
      b.pinFirst('srv', new Map([['x', pin('x2')]]))
    ])
    t.same(first, second, 'both replicas see the same pins')
    const held = await b.pinsOf('srv')
    t.same(held, first)
    t.same(await a.pinFirst('srv', new Map([['z', pin('z1')]])), held, 'a server with pins keeps them')
    t.same(await a.pinsOf('other'), new Map(), 'pins are per server')
  })

  t.test(`${store.name}: an approval pins new definitions over the old, seen by every replica`, async (t) => {
    const { a, b } = store.open(t)
    await a.pinFirst('srv', new Map([['x', pin('x1')], ['y', pin('y1')]]))
    await b.approve('srv', new Map([['x', pin('x2')], ['n', pin('n1')]]))
    const held = await a.pinsOf('srv')
    t.same([...held.keys()].sort(), ['n', 'x', 'y'])
    t.equal(held.get('x')!.hash, 'x2')
    t.equal(held.get('y')!.hash, 'y1')
    t.same(held.get('n')!.definition, { name: 'n1', inputSchema: { type: 'object' } })
  })

  t.test(`${store.name}: an empty first import pins nothing, so the next import is the first`, async (t) => {
    const { a } = store.open(t)
    t.same(await a.pinFirst('srv', new Map()), new Map())
    t.same([...(await a.pinFirst('srv', new Map([['x', pin('x1')]]))).keys()], ['x'])
  })
}
