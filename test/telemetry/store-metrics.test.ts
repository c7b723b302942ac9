import { Registry } from 'prom-client'
import t from 'tap'
import { type Store, StoreUnavailableError } from '../../src/store/types.js'
import { meteredAuthorizer } from '../../src/telemetry/authorizer-metrics.js'
import { meteredStore } from '../../src/telemetry/store-metrics.js'

/** The value of one sample of the registry's text, 0 when it is absent. */
async function value (registry: Registry, sample: string): Promise<number> {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(sample + ' '))
  return line === undefined ? 0 : Number(line.slice(sample.length + 1))
}

t.test('the metered store times every operation, counts store failures but not what the caller threw, and a lease lost', async (t) => {
  const registry = new Registry()
  const inner = {
    getRun: async () => undefined,
    completeBatch: async () => false,
    updateRun: async () => { throw new StoreUnavailableError('unreachable') },
    endRun: async () => { throw new Error('run of another tenant') }
  } as unknown as Store
  const store = meteredStore(inner, registry)
  t.equal(await store.getRun('r'), undefined)
  t.equal(await store.completeBatch('r', 'me', {} as never), false)
  await t.rejects(store.updateRun('r', () => {}), StoreUnavailableError)
  await t.rejects(store.endRun('r', 0), { message: 'run of another tenant' })
  t.equal(await value(registry, 'toolgate_store_operation_duration_seconds_count{operation="getRun"}'), 1)
  t.equal(await value(registry, 'toolgate_store_operation_duration_seconds_count{operation="updateRun"}'), 1, 'a failure is timed too')
  t.equal(await value(registry, 'toolgate_store_errors_total{operation="updateRun"}'), 1)
  t.equal(await value(registry, 'toolgate_store_errors_total{operation="endRun"}'), 0, "the caller's own error is not the store's")
  t.equal(await value(registry, 'toolgate_leases_lost_total'), 1)
  // A stub given to the inner store later is what runs.
  ;(inner as { getRun: unknown }).getRun = async () => ({ runId: 'late' })
  t.match(await store.getRun('r'), { runId: 'late' })
})

t.test('the metered authorizer counts allow, deny and no decision (a throw included) and times each', async (t) => {
  const registry = new Registry()
  const answers = [{ ok: true, value: undefined }, { ok: false, reason: 'policy_denied', message: 'no' }, { ok: false, reason: 'unauthorized', message: 'down' }] as const
  let i = 0
  const authorize = meteredAuthorizer(async () => {
    const a = answers[i++]
    if (a === undefined) throw new Error('boom')
    return a
  }, registry)
  const input = { runId: 'r', tenant: 't', tool: 'x', callId: 'c', arguments: { secret: 'zz61' } }
  for (let n = 0; n < 3; n++) await authorize(input)
  await t.rejects(authorize(input))
  t.equal(await value(registry, 'toolgate_authorizer_decisions_total{decision="allow"}'), 1)
  t.equal(await value(registry, 'toolgate_authorizer_decisions_total{decision="deny"}'), 1)
  t.equal(await value(registry, 'toolgate_authorizer_decisions_total{decision="no_decision"}'), 2)
  t.equal(await value(registry, 'toolgate_authorizer_duration_seconds_count'), 4)
  t.notMatch(await registry.metrics(), /zz61/)
})
