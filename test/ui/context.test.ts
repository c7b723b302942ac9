/**
 * The operator page's context views, in a real browser: a batch's conflict
 * keys and why each call waited; approval cards with the tool's description,
 * the batch's other calls and the run's latest calls; the runs list an
 * operator key signs in to, filtered by state, leading to a timeline that
 * shows no argument and no content. Every control is reached and used with
 * the keyboard.
 */
import t from 'tap'
import type { Page } from 'playwright-core'
import { buildTestApp, post, startExecutor, tool, type ExecutorCall } from '../helper.js'
import { openBrowser, signIn } from './browser.js'

const CANARY = 'canary-context-argument-51c9'

/** With TOOLGATE_UPDATE_SCREENSHOTS=1, the view as docs/images/<name>.png; with TOOLGATE_SHOW_SCREENSHOTS=<dir>, there. */
async function screenshot (page: Page, name: string): Promise<void> {
  const dir = process.env.TOOLGATE_SHOW_SCREENSHOTS
  if (dir !== undefined) await page.screenshot({ path: `${dir}/${name}.png`, fullPage: true })
  if (process.env.TOOLGATE_UPDATE_SCREENSHOTS !== '1') return
  await page.locator('main').screenshot({ path: new URL(`../../docs/images/${name}.png`, import.meta.url).pathname })
}

const ex = await startExecutor(t)
// Each look takes a little while, so calls of an epoch overlap and wait for one another.
ex.on('look', async () => { await new Promise((resolve) => setTimeout(resolve, 30)); return { content: 'a tile' } })
ex.on('paint', (call: ExecutorCall) => ({ content: `painted ${String(call.arguments.k)}` }))
ex.on('poke', async (_call: ExecutorCall, _req, reply) => reply.code(502).send({ error: 'upstream went away' }))
const keysDoc = {
  keys: [
    { key: 'acme-ctx-orchestrator', tenant: 'acme', name: 'orchestrator-1', roles: ['orchestrator'] },
    { key: 'acme-ctx-approver-key', tenant: 'acme', name: 'alice', roles: ['approver'] },
    { key: 'acme-ctx-operator-key', tenant: 'acme', name: 'oscar', roles: ['operator'] },
    { key: 'other-ctx-operator-key', tenant: 'other', name: 'olga', roles: ['operator'] }
  ]
}
// Validation's wall-clock budget (TOOLGATE_MAX_VALIDATION_MS, 50 ms) can reject a call on a loaded machine; these tests are not about it.
const config = { maxValidationMs: 60_000 }
const { app, logs } = await buildTestApp(t, {
  config,
  keysDoc,
  tools: [
    tool('look', ex.url, { readOnly: true, conflictKey: 'tile:{/x}' }),
    tool('paint', ex.url, { requiresApproval: true, conflictKey: 'tile:{/x}', description: 'Paints a tile of the shared canvas in one colour; the old colour is lost.' }),
    tool('poke', ex.url, { conflictKey: 'door:{/k}' })
  ]
})
const base = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1')
const orchestrator = { authorization: 'Bearer acme-ctx-orchestrator' }

t.test('a batch shows each call\'s conflict key and why it waited: the call holding its key, a slot, the epoch before, an uncertain write', async (t) => {
  await post(app, '/v1/runs', { runId: 'wait-run', maxConcurrentTools: 2 }, orchestrator)
  const look = (id: string, x: number) => ({ id, name: 'look', arguments: { x, secret: CANARY } })
  const res = await post(app, '/v1/runs/wait-run/batches', {
    batchId: 'turn-1',
    // r1 and r3 start; r2 waits for r1's key tile:1; r4 for a slot; then the pokes, one epoch each.
    calls: [look('r1', 1), look('r2', 1), look('r3', 2), look('r4', 3), { id: 'w1', name: 'poke', arguments: { k: 'front', secret: CANARY } }, { id: 'w2', name: 'poke', arguments: { k: 'front' } }]
  }, orchestrator)
  const byId = Object.fromEntries(res.body.results.map((r: { callId: string }) => [r.callId, r]))
  t.strictSame(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok', 'ok', 'uncertain', 'blocked'])
  t.strictSame(byId.r2.details.waited, { for: 'conflict_key', callId: 'r1' })
  t.equal(byId.r1.details.conflictKey, 'tile:1')
  t.equal(byId.r1.details.waited, undefined, 'a call that started with its epoch did not wait')

  const { page, problems } = await openBrowser(t)
  await signIn(page, base, 'acme-ctx-orchestrator')
  await page.goto(`${base}/ui/#/runs/wait-run/batches/turn-1`)
  await page.waitForSelector('table.calls')
  const cell = async (call: string, column: string): Promise<string> => await page.locator(`table.calls tr[data-call="${call}"] td.${column}`).innerText()
  t.equal(await cell('r1', 'key'), 'tile:1')
  t.equal(await cell('w1', 'key'), 'door:front')
  t.equal(await cell('r1', 'waited'), '', 'r1 started at once')
  t.match(await cell('r2', 'waited'), /key held by r1/)
  t.match(await cell('r4', 'waited'), /a free slot/)
  t.match(await cell('w1', 'waited'), /epoch \d+ to settle/)
  t.match(await cell('w2', 'waited'), /never ran: blocked by w1 \(uncertain write\)/)
  // The link to the call holding the key is reached with the keyboard.
  const holder = page.locator('table.calls tr[data-call="r2"] td.waited a')
  await holder.focus()
  await page.keyboard.press('Enter')
  t.equal(await holder.evaluate((a) => a === (a.ownerDocument as unknown as { activeElement: unknown }).activeElement), true, 'the link takes focus')
  await screenshot(page, 'waits')
  t.notOk((await page.content()).includes(CANARY), 'no argument on the page')
  t.notOk(logs.join('').includes('tile:1'), 'conflict keys never reach a log line')
  t.notOk(JSON.stringify(res.body.events).includes('tile:'), 'nor an event')
  t.same(problems, [])
})

t.test('an approval card shows the tool\'s description, the batch\'s other calls and the run\'s latest calls; approved with the keyboard', async (t) => {
  await post(app, '/v1/runs', { runId: 'card-run' }, orchestrator)
  await post(app, '/v1/runs/card-run/batches', { batchId: 'turn-1', calls: [{ id: 'a1', name: 'look', arguments: { x: 4 } }, { id: 'a2', name: 'poke', arguments: { k: 'gate', secret: CANARY } }] }, orchestrator)
  const held = await post(app, '/v1/runs/card-run/batches', {
    batchId: 'turn-2',
    calls: [{ id: 'b1', name: 'look', arguments: { x: 5 } }, { id: 'b2', name: 'paint', arguments: { x: 5, k: 'teal' } }, { id: 'b3', name: 'fly', arguments: { secret: CANARY } }]
  }, orchestrator)
  t.equal(held.status, 202)
  const { page, problems } = await openBrowser(t)
  await page.goto(`${base}/ui`)
  await page.fill('#key', 'acme-ctx-approver-key')
  await page.keyboard.press('Enter')
  const card = page.locator('article.approval[data-call="b2"]')
  await card.waitFor()
  t.equal(await card.locator('.description').innerText(), 'Paints a tile of the shared canvas in one colour; the old colour is lost.')
  t.match(await card.locator('.batch-calls li[data-call="b1"]').innerText(), /b1\s+look\s+waiting/)
  t.match(await card.locator('.batch-calls li[data-call="b3"]').innerText(), /b3\s+fly\s+rejected/)
  t.equal(await card.locator('.batch-calls li[data-call="b2"]').count(), 0, 'not the call itself')
  t.match(await card.locator('.recent-calls li[data-call="a1"]').innerText(), /a1\s+look\s+ok\s+· turn 1/)
  t.match(await card.locator('.recent-calls li[data-call="a2"]').innerText(), /a2\s+poke\s+uncertain/)
  t.equal((await card.locator('.context').innerText()).includes(CANARY), false, 'no other call\'s arguments on the card')
  await screenshot(page, 'approval-context')
  // Keyboard only: from the arguments box, Tab to Approve and press Enter.
  await card.locator('textarea').focus()
  await page.keyboard.press('Tab')
  t.equal(await page.evaluate(() => (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document.activeElement.textContent), 'Approve')
  await page.keyboard.press('Enter')
  await card.locator('.outcome a').waitFor()
  t.match(await card.locator('.outcome').innerText(), /the batch completed/)
  t.same(problems.filter((p) => !/403/.test(p)), [])
})

t.test('an operator key signs in to the tenant\'s runs, filters them by state and opens a timeline without arguments or content', async (t) => {
  await post(app, '/v1/runs', { runId: 'ended-run' }, orchestrator)
  await app.inject({ method: 'DELETE', url: '/v1/runs/ended-run', headers: orchestrator })
  await post(app, '/v1/runs', { runId: 'busy-run' }, orchestrator)
  await post(app, '/v1/runs/busy-run/batches', { batchId: 'turn-1', calls: [{ id: 'p1', name: 'look', arguments: { x: 9, secret: CANARY } }] }, orchestrator)

  const { page, problems } = await openBrowser(t)
  await page.goto(`${base}/ui`)
  await page.fill('#key', 'acme-ctx-operator-key')
  await page.keyboard.press('Enter')
  await page.waitForSelector('table.runs tr[data-run="busy-run"]')
  t.notMatch(page.url(), /summary/, 'the runs list, not the summary')
  t.match(await page.locator('tr[data-run="busy-run"] td.last-active').innerText(), /\d+ s ago/)
  t.equal(await page.locator('tr[data-run="ended-run"]').count(), 1)
  // The filter is a labelled select, used from the keyboard.
  const filter = page.getByLabel('State')
  await filter.focus()
  await filter.selectOption('ended')
  await page.waitForSelector('table.runs caption >> text=ended runs')
  await page.waitForSelector('tr[data-run="ended-run"]')
  t.strictSame(await page.locator('table.runs tbody tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-state'))), ['ended'], 'only ended runs')
  await screenshot(page, 'runs')
  await filter.selectOption('')
  await page.locator('tr[data-run="busy-run"] a').focus()
  await page.keyboard.press('Enter')
  await page.waitForSelector('table.batches tr[data-batch="turn-1"]')
  await page.locator('tr[data-batch="turn-1"] a').click()
  await page.waitForSelector('svg.timeline')
  t.match(await page.locator('table.calls tr[data-call="p1"]').innerText(), /p1\s+look\s+ok/)
  t.notOk((await page.content()).includes(CANARY), 'no argument on the page')

  const batch = await app.inject({ method: 'GET', url: '/v1/runs/busy-run/batches/turn-1', headers: { authorization: 'Bearer acme-ctx-operator-key' } })
  t.equal(batch.statusCode, 200)
  t.notOk(batch.body.includes(CANARY), 'the API answers an operator no argument')
  t.notOk(batch.body.includes('a tile'), 'nor the content the model read')
  const foreign = await app.inject({ method: 'GET', url: '/v1/runs?limit=500', headers: { authorization: 'Bearer other-ctx-operator-key' } })
  t.strictSame(foreign.json().runs, [], "another tenant's operator sees none of these runs")
  t.same(problems, [])
})
