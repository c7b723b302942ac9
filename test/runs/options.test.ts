import t from 'tap'
import { resolveRunOptions } from '../../src/runs/options.js'
import { DEFAULT_LIMITS } from '../helper.js'


t.test('an empty request gets every default, with the server default for maxConcurrentTools', async (t) => {
  t.strictSame(resolveRunOptions({}, 8), {
    toolExecution: 'safeParallel',
    maxConcurrentTools: 8,
    limits: DEFAULT_LIMITS,
    tools: null,
    events: 'stock',
    metadata: {}
  })
  t.equal(resolveRunOptions({}, 17).maxConcurrentTools, 17)
})

t.test('every given option wins over its default', async (t) => {
  const limits = {
    exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0, maxTurns: 1, maxToolCalls: 2, timeoutMs: 3, maxTotalTokens: 4,
    cycleAdvisoryRepetitions: 5, cycleTerminationRepetitions: 0, consecutiveErrorAdvisory: 0, consecutiveErrorTermination: 7, noProgressAdvisory: 9, noProgressTermination: 0
  }
  t.strictSame(resolveRunOptions({
    toolExecution: 'parallel',
    maxConcurrentTools: 2,
    limits,
    tools: ['a', 'b'],
    events: 'lifecycle',
    metadata: { k: 'v' }
  }, 8), { toolExecution: 'parallel', maxConcurrentTools: 2, limits, tools: ['a', 'b'], events: 'lifecycle', metadata: { k: 'v' } })
})

t.test('limits given in part are completed, one field at a time', async (t) => {
  for (const [key, value] of Object.entries({
    exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 20, maxTurns: 5, maxToolCalls: 6, timeoutMs: 7000, maxTotalTokens: 8,
    cycleAdvisoryRepetitions: 0, cycleTerminationRepetitions: 9, consecutiveErrorAdvisory: 1, consecutiveErrorTermination: 0, noProgressAdvisory: 2, noProgressTermination: 3
  })) {
    t.strictSame(resolveRunOptions({ limits: { [key]: value } }, 8).limits, { ...DEFAULT_LIMITS, [key]: value }, key)
  }
  t.strictSame(resolveRunOptions({ limits: {} }, 8).limits, DEFAULT_LIMITS)
})

t.test('a null tools list means every tool; an empty list means none', async (t) => {
  t.equal(resolveRunOptions({ tools: null }, 8).tools, null)
  t.strictSame(resolveRunOptions({ tools: [] }, 8).tools, [])
})

t.test('the options are frozen and do not share the caller objects', async (t) => {
  const input = { tools: ['a'], metadata: { k: 'v' }, limits: { maxTurns: 2 } }
  const options = resolveRunOptions(input, 8)
  input.tools.push('b')
  input.metadata.k = 'changed'
  input.limits.maxTurns = 99
  t.strictSame(options.tools, ['a'])
  t.strictSame(options.metadata, { k: 'v' })
  t.equal(options.limits.maxTurns, 2)
  t.ok(Object.isFrozen(options))
  t.ok(Object.isFrozen(options.limits))
  t.ok(Object.isFrozen(options.tools))
  t.ok(Object.isFrozen(options.metadata))
})

t.test('the shared default objects cannot be changed through one run', async (t) => {
  const a = resolveRunOptions({}, 8)
  t.throws(() => { (a.limits as { maxTurns: number | null }).maxTurns = 1 })
  t.throws(() => { (a.metadata as Record<string, string>).x = 'y' })
  t.strictSame(resolveRunOptions({}, 8).limits, DEFAULT_LIMITS)
  t.strictSame(resolveRunOptions({}, 8).metadata, {})
})

t.test('the server defaults of the loop limits fill what a run leaves out', async (t) => {
  const server = { cycleAdvisoryRepetitions: 2, cycleTerminationRepetitions: 4, consecutiveErrorAdvisory: 5, consecutiveErrorTermination: 0, noProgressAdvisory: 6, noProgressTermination: 7 }
  t.strictSame(resolveRunOptions({}, 8, server).limits, { ...DEFAULT_LIMITS, ...server })
  t.strictSame(resolveRunOptions({ limits: { noProgressTermination: 1 } }, 8, server).limits, { ...DEFAULT_LIMITS, ...server, noProgressTermination: 1 })
  t.equal(resolveRunOptions({}, 8, server).limits, resolveRunOptions({}, 3, server).limits, 'runs with the defaults share one frozen object')
})
