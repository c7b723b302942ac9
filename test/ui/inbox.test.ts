/**
 * The approvals inbox in a real browser: a held call is approved with an
 * edit from the page, the batch completes with the edited arguments, and
 * another tenant's inbox stays empty.
 */
import t from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { openBrowser, signIn } from './browser.js'

const ex = await startExecutor(t)
const keysDoc = {
  keys: [
    { key: 'acme-orchestrator', tenant: 'acme', roles: ['orchestrator'] },
    { key: 'acme-approver', name: 'dana', tenant: 'acme', roles: ['approver'] },
    { key: 'rival-approver', tenant: 'rival', roles: ['approver', 'orchestrator'] }
  ]
}
// Validation's wall-clock budget (TOOLGATE_MAX_VALIDATION_MS, 50 ms) can reject a call on a loaded machine; these tests are not about it.
const config = { maxValidationMs: 60_000 }
const { app } = await buildTestApp(t, {
  config,
  keysDoc,
  tools: [tool('look', ex.url, { readOnly: true }), tool('send', ex.url, { requiresApproval: true })]
})
const base = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1')
const orchestrator = { authorization: 'Bearer acme-orchestrator' }

await post(app, '/v1/runs', { runId: 'inbox-run' }, orchestrator)
const held = await post(app, '/v1/runs/inbox-run/batches', {
  batchId: 'turn-1',
  calls: [
    { id: 'c1', name: 'look', arguments: { x: 1 } },
    { id: 'c2', name: 'send', arguments: { k: 'draft to everyone' } }
  ]
}, orchestrator)
t.equal(held.status, 202, 'the batch waits for a person')
t.equal(held.body.state, 'awaiting_approval')

t.test('another tenant sees nothing waiting in its inbox', async (t) => {
  const { page } = await openBrowser(t)
  await signIn(page, base, 'rival-approver')
  await page.goto(`${base}/ui/#/approvals`)
  await page.waitForSelector('p.empty')
  t.equal(await page.locator('article.approval').count(), 0)
})

t.test('approving an edited call from the inbox runs the batch with the edit', async (t) => {
  const { page, problems } = await openBrowser(t)
  // An approver may not list runs: signing in takes that key to the inbox.
  await page.goto(`${base}/ui`)
  await page.fill('#key', 'acme-approver')
  await page.click('#sign-in button[type=submit]')
  const card = page.locator('article.approval[data-call="c2"]')
  await card.waitFor()
  t.match(await card.locator('textarea').inputValue(), /draft to everyone/, 'the approver sees the arguments')
  t.equal(ex.calls.length, 0, 'nothing of the batch ran before the decision')

  await card.locator('textarea').fill(JSON.stringify({ k: 'draft to the team' }))
  await card.locator('button.approve').click()
  await page.waitForSelector('article.approval[data-call="c2"][data-outcome="completed"]')

  t.same(ex.calls.map((c) => c.callId).sort(), ['c1', 'c2'], 'the whole batch ran once the last call was decided')
  t.same(ex.calls.find((c) => c.callId === 'c2')?.arguments, { k: 'draft to the team' }, 'the executor got the edited arguments')
  const batch = await get(app, '/v1/runs/inbox-run/batches/turn-1', orchestrator)
  t.equal(batch.body.state, 'completed')
  t.same(batch.body.results.map((r: { status: string }) => r.status), ['ok', 'ok'])

  await page.reload()
  await page.waitForSelector('p.empty')
  t.same(problems.filter((p) => !/status of 403/.test(p)), [], 'no script errors (the runs list the approver may not read aside)')
})
