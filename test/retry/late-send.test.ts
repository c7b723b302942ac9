/**
 * The retry soak's interleaving, driven by hand: a send toolgate gave up on
 * reaches the executor's decision only after the model's next batch sent
 * the idempotent retry under the same Idempotency-Key (docs/retries.md, "A
 * send that arrives late"). toolgate's side: the retry carries the original
 * key while the first send is still in flight; the retry's definitive
 * answer (here a refusal) resolves the uncertainty; the model's next
 * identical call is a new call under its own key. With an executor that
 * answers a repeated key with its first outcome, refusal included, the
 * write is applied once in all.
 */
import t from 'tap'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { FakeClock } from '../clock.js'
import { TIMEOUT_MS, batch, listUncertain, metric, timeOut } from './support.js'

t.test('a first send decided after its refused retry is answered with the refusal: resolved by the retry, the next call under its own key, applied once', async (t) => {
  const ex = await startExecutor(t)
  const clock = new FakeClock()
  let releaseFirst!: () => void
  const firstHeld = new Promise<void>((resolve) => { releaseFirst = resolve })
  t.teardown(() => releaseFirst())
  let firstDecided!: (outcome: number | 'applied') => void
  const firstOutcome = new Promise<number | 'applied'>((resolve) => { firstDecided = resolve })
  /** The executor's first outcome by Idempotency-Key: applied, or the HTTP status it refused with. */
  const outcomes = new Map<string, number | 'applied'>()
  const applied: string[] = []
  ex.on('put', async (c, _req, reply) => {
    // The first send reaches the executor's decision late, as in the soak.
    if (c.callId === 'c1') {
      await timeOut(clock)
      await firstHeld
    }
    const key = c.idempotencyKey!
    let outcome = outcomes.get(key)
    if (outcome === undefined) {
      // The first of its key to be decided: this executor refuses the retry, applies anything else.
      outcome = c.callId === 'c2' ? 409 : 'applied'
      outcomes.set(key, outcome)
      if (outcome === 'applied') applied.push(key)
    }
    if (c.callId === 'c1') firstDecided(outcome)
    return outcome === 'applied' ? { content: { stored: true } } : reply.code(outcome).send({ content: 'refused' })
  })
  const { app } = await buildTestApp(t, {
    clock,
    tools: [tool('put', ex.url, { executor: { url: `${ex.url}/tools/put`, timeoutMs: TIMEOUT_MS }, idempotent: true })]
  })
  t.equal((await post(app, '/v1/runs', { runId: 'late' })).status, 201)

  const first = await batch(app, 'late', 'b1', [{ id: 'c1', name: 'put', arguments: { k: 'v' } }])
  t.equal(first.results[0].status, 'uncertain', 'toolgate gave up on the first send')
  const op = first.results[0].details.operationId
  t.equal(applied.length, 0, 'the executor has not decided it yet')

  const retry = await batch(app, 'late', 'b2', [{ id: 'c2', name: 'put', arguments: { k: 'v' } }])
  t.equal(retry.results[0].details.operationId, op, 'the retry went out under the original operation')
  t.equal(retry.results[0].status, 'error', 'and was refused')
  t.equal(retry.results[0].details.httpStatus, 409)
  t.same(await listUncertain(app, 'late'), [], "the retry's definitive answer resolved the uncertainty")
  t.equal(await metric(app, 'toolgate_uncertain_resolved_total', 'how="idempotent_retry"'), 1)

  releaseFirst()
  t.equal(await firstOutcome, 409, "the late first send gets its key's first outcome, the refusal")

  const next = await batch(app, 'late', 'b3', [{ id: 'c3', name: 'put', arguments: { k: 'v' } }])
  t.equal(next.results[0].status, 'ok')
  const op3 = next.results[0].details.operationId
  t.not(op3, op, 'the next identical call is a new call under its own operation id')
  t.same(ex.calls.map((c) => [c.callId, c.idempotencyKey]), [['c1', op], ['c2', op], ['c3', op3]], 'two keys in all: the original, twice, then the new call')
  t.same(applied, [op3], 'applied once')
})
