import { randomUUID } from 'node:crypto'
import t from 'tap'
import { RedisToolPins } from '../../src/store/redis-tool-pins.js'
import { MemoryToolPins, type PinChange, type PinListener, type ToolPin, type ToolPins } from '../../src/store/tool-pins.js'
import { REDIS_URL, deleteByPrefix, redisProxy } from './harness.js'

type Tap = { teardown: (fn: () => unknown) => void }

/** Two clients of the same pins: two replicas on Redis, one process's pins twice in memory. */
const stores: Array<{ name: string, open: (t: Tap) => { a: ToolPins, b: ToolPins, subscribed: () => Promise<void> } }> = [
  {
    name: 'memory',
    open: () => {
      const pins = new MemoryToolPins()
      return { a: pins, b: pins, subscribed: async () => {} }
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
      return { a, b, subscribed: async () => { await Promise.all([a.whenSubscribed(), b.whenSubscribed()]) } }
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

  t.test(`${store.name}: an announcement reaches every other listener once, and not the teller's own`, async (t) => {
    const { a, b, subscribed } = store.open(t)
    const heardA: Array<[string | null, PinChange]> = []
    const heardB: Array<[string | null, PinChange]> = []
    let arrived: () => void = () => {}
    const onA: PinListener = (server, change) => { heardA.push([server, change]) }
    const stopA = a.onChange(onA)
    const stopB = b.onChange((server, change) => {
      heardB.push([server, change])
      arrived()
    })
    await subscribed()
    const heard = new Promise<void>((resolve) => { arrived = resolve })
    await a.announce('srv', 'approved', onA)
    await heard
    // Give a duplicate delivery time to show up before counting.
    await new Promise((resolve) => setTimeout(resolve, 100))
    t.same(heardB, [['srv', 'approved']], 'the other listener hears it once')
    t.same(heardA, [], "the teller's own listener does not")
    stopB()
    await a.announce('srv', 'quarantined')
    await new Promise((resolve) => setTimeout(resolve, 100))
    t.same(heardA, [['srv', 'quarantined']], 'without a teller named, every listener of this client hears it')
    t.equal(heardB.length, 1, 'an unsubscribed listener hears nothing more')
    stopA()
  })
}

t.test('redis: a subscription that lost Redis and is back tells its listeners null (announcements may have been missed: every server is to be read again)', async (t) => {
  const proxy = await redisProxy(t)
  const prefix = `toolgate-test:${randomUUID()}:`
  const pins = new RedisToolPins({ url: `redis://127.0.0.1:${proxy.port}`, prefix })
  t.teardown(async () => {
    await pins.close()
    await deleteByPrefix(prefix)
  })
  const heard: Array<[string | null, PinChange]> = []
  let arrived: () => void = () => {}
  pins.onChange((server, change) => {
    heard.push([server, change])
    arrived()
  })
  await pins.whenSubscribed()
  t.same(heard, [], 'nothing is heard on subscribing')
  const back = new Promise<void>((resolve) => { arrived = resolve })
  proxy.drop()
  await back
  t.same(heard, [[null, 'approved']])
})
