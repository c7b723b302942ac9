/**
 * After resolution (SPEC section 14): however an uncertainty was resolved
 * (`committed`, `rejected` or `failed`; by hand or through the status URL),
 * resolution sends nothing, and a later identical call in a later batch is
 * a plain new call: dispatched, the executor sees it again, under the
 * operation id of its own call id, answered by the executor.
 */
import t, { type Test } from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { Attempts, batch, listUncertain, startStatusServer, type StatusBehaviour } from './support.js'
import { FakeClock } from '../clock.js'

/** The tools' timeout, on the app's clock: long, so that no real timer (undici's own) runs out first. */
const TIMEOUT_MS = 60_000

async function setup (t: Test, status: StatusBehaviour = () => ({ status: 'unknown' })) {
  const ex = await startExecutor(t)
  const clock = new FakeClock()
  const release: Array<() => void> = []
  t.teardown(() => { for (const r of release) r() })
  // The first send of each tool applies, then answers too late (its timeout passes while the executor has it); later ones answer at once.
  for (const name of ['pay', 'order']) {
    const answer = name === 'order' ? { status: 'committed', result: { order: 2 } } : { content: { paid: true } }
    ex.on(name, async () => {
      if (ex.calls.filter((c) => c.tool === name).length > 1) return answer
      await clock.pass(TIMEOUT_MS)
      await new Promise<void>((resolve) => release.push(resolve))
      return answer
    })
  }
  const st = await startStatusServer(t)
  st.on('pay', status)
  st.on('order', status)
  const attempts = new Attempts()
  const executor = (name: string) => ({ url: `${ex.url}/tools/${name}`, timeoutMs: TIMEOUT_MS, statusUrl: `${st.url}/status/${name}` })
  const { app } = await buildTestApp(t, {
    clock,
    uncertain: { onRecoveryAttempt: attempts.hook },
    tools: [tool('pay', ex.url, { executor: executor('pay') }), tool('order', ex.url, { executor: executor('order'), action: {} })]
  })
  t.equal((await post(app, '/v1/runs', { runId: 'r' })).status, 201)
  const sends = (name: string) => ex.calls.filter((c) => c.tool === name)
  return { app, attempts, sends }
}

/** The write left uncertain, then the identical call (new call id) in the next batch, sent and answered by the executor. */
async function resendAfter (t: Test, app: Awaited<ReturnType<typeof setup>>['app'], sends: (name: string) => unknown[], name: string, op: string): Promise<void> {
  t.same(await listUncertain(app, 'r'), [], 'resolved')
  t.equal(sends(name).length, 1, 'resolution sent nothing')
  const later = await batch(app, 'r', 'b2', [{ id: 'c2', name, arguments: { x: 1 } }])
  const result = later.results[0]
  t.equal(result.status, 'ok', 'dispatched as a plain new call')
  t.equal(result.details.reason, undefined, 'answered by the executor, not by toolgate')
  t.equal(result.details.repeatOf, undefined)
  t.not(result.details.operationId, op, 'under the operation of its own call id')
  const seen = sends(name) as Array<{ operationId: string, idempotencyKey?: string }>
  t.equal(seen.length, 2, 'the executor saw it again')
  t.equal(seen[1]!.operationId, result.details.operationId)
  t.equal(seen[1]!.idempotencyKey, result.details.operationId, 'a new Idempotency-Key')
}

for (const name of ['pay', 'order']) {
  for (const status of ['committed', 'rejected', 'failed'] as const) {
    t.test(`${name}: resolved ${status} by hand, the next identical call is sent`, async (t) => {
      const { app, sends } = await setup(t)
      const first = await batch(app, 'r', 'b1', [{ id: 'c1', name, arguments: { x: 1 } }])
      t.equal(first.results[0].status, 'uncertain')
      const op = first.results[0].details.operationId
      const resolved = await post(app, `/v1/receipts/${op}/resolve`, { status, result: { by: 'hand' } })
      t.equal(resolved.status, 200)
      t.match(resolved.body, { resolved: true, how: 'manual', status })
      await resendAfter(t, app, sends, name, op)
    })
  }

  t.test(`${name}: resolved committed through the status URL, the next identical call is sent`, async (t) => {
    const { app, attempts, sends } = await setup(t, () => ({ status: 'committed', result: { recovered: true } }))
    const first = await batch(app, 'r', 'b1', [{ id: 'c1', name, arguments: { x: 1 } }])
    const op = first.results[0].details.operationId
    t.equal((await attempts.until(1)).kind, 'resolved')
    await resendAfter(t, app, sends, name, op)
  })
}

t.test('an action sent again under its own call id after a committed resolution replays its settled receipt, unsent', async (t) => {
  const { app, attempts, sends } = await setup(t, () => ({ status: 'committed', result: { recovered: true } }))
  const first = await batch(app, 'r', 'b1', [{ id: 'c1', name: 'order', arguments: { x: 1 } }])
  const op = first.results[0].details.operationId
  t.equal((await attempts.until(1)).kind, 'resolved')
  const again = await batch(app, 'r', 'b2', [{ id: 'c1', name: 'order', arguments: { x: 1 } }])
  t.match(again.results[0], { status: 'ok', details: { operationId: op, receipt: { status: 'committed', result: { recovered: true }, dispatch: { disposition: 'replayed' } } } })
  t.equal(sends('order').length, 1, 'the same call, not a new one: not sent')
  t.equal((await get(app, `/v1/receipts/${op}`)).body.dispatch.disposition, 'recovered', 'the stored receipt keeps how it was settled')
})
