/**
 * The operator page's views for running a service, in a real browser: a
 * waiting batch that updates by itself once decided, the decision (who, when,
 * why, edit, time waited), a call blocked by a write of an earlier turn
 * linked to that turn, the uncertain-writes panel with resolve and recheck,
 * operator sign-in, navigation hidden while signed out, and a timeline that
 * fits an 800 px window with readable text, a label on an epoch of only a
 * blocked call and repeat marks in a column of their own.
 */
import t from 'tap'
import type { Page } from 'playwright-core'
import { buildTestApp, post, startExecutor, tool, type ExecutorCall } from '../helper.js'
import { openBrowser, signIn } from './browser.js'

declare const document: { querySelector (s: string): { scrollWidth: number, clientWidth: number } | null }
declare function getComputedStyle (element: unknown): { fontSize: string, display: string }

const CANARY = 'canary-secret-argument-7d1e'

/** With TOOLGATE_UPDATE_SCREENSHOTS=1, the view as docs/images/<name>.png. */
async function screenshot (page: Page, name: string): Promise<void> {
  if (process.env.TOOLGATE_UPDATE_SCREENSHOTS !== '1') return
  await page.locator('main').screenshot({ path: new URL(`../../docs/images/${name}.png`, import.meta.url).pathname })
}
const ex = await startExecutor(t)
ex.on('look', () => ({ content: 'a tile' }))
ex.on('paint', (call: ExecutorCall) => ({ content: `painted ${String(call.arguments.k)}` }))
ex.on('poke', async (_call: ExecutorCall, _req, reply) => reply.code(502).send({ error: 'upstream went away' }))
const keysDoc = {
  keys: [
    { key: 'acme-ops-orchestrator', tenant: 'acme', name: 'orchestrator-1', roles: ['orchestrator'] },
    { key: 'acme-ops-approver-key', tenant: 'acme', name: 'alice', roles: ['approver'] },
    { key: 'acme-ops-operator-key', tenant: 'acme', name: 'oscar', roles: ['operator'] }
  ]
}
// Validation's wall-clock budget (TOOLGATE_MAX_VALIDATION_MS, 50 ms) can reject a call on a loaded machine; these tests are not about it.
const config = { maxValidationMs: 60_000 }
const { app } = await buildTestApp(t, {
  config,
  keysDoc,
  tools: [tool('look', ex.url, { readOnly: true }), tool('paint', ex.url, { requiresApproval: true }), tool('poke', ex.url)]
})
const base = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1')
const orchestrator = { authorization: 'Bearer acme-ops-orchestrator' }
const approver = { authorization: 'Bearer acme-ops-approver-key' }

t.test('a waiting batch updates by itself once decided, and shows who decided, when, why, the edit and the time waited', async (t) => {
  await post(app, '/v1/runs', { runId: 'held-run' }, orchestrator)
  const held = await post(app, '/v1/runs/held-run/batches', {
    batchId: 'turn-1',
    calls: [{ id: 'r1', name: 'look', arguments: { x: 1 } }, { id: 'p1', name: 'paint', arguments: { k: 'red' } }]
  }, orchestrator)
  t.equal(held.status, 202)
  const { page, problems } = await openBrowser(t)
  await signIn(page, base, 'acme-ops-orchestrator')
  await page.goto(`${base}/ui/#/runs/held-run/batches/turn-1`)
  await page.waitForSelector('.pending[data-state="awaiting_approval"]')
  t.match(await page.locator('table.held').innerText(), /p1\s+paint/, 'the held call is listed')
  const decided = await post(app, '/v1/runs/held-run/batches/turn-1/approvals', {
    decisions: [{ callId: 'p1', approve: true, arguments: { k: 'blue' } }]
  }, approver)
  t.equal(decided.status, 200)
  // No reload: the page asks again by itself and draws the completed batch.
  await page.waitForSelector('svg.timeline', { timeout: 15_000 })
  const cell = await page.locator('tr[data-call="p1"] td.decision').innerText()
  t.match(cell, /approved/)
  t.match(cell, /by alice/, 'who decided: the key\'s name')
  t.match(cell, /at \d{2}:\d{2}:\d{2}\.\d{3}/, 'when')
  t.match(cell, /after \d+(\.\d)? (ms|s|min)/, 'how long the call waited')
  t.match(cell, /edited/, 'that the arguments were edited')
  t.equal(await page.locator('tr[data-call="r1"] td.decision').innerText(), '', 'a call that needed no decision shows none')
  const started = await page.locator('table.calls tbody tr td:nth-child(6)').allInnerTexts()
  t.ok(started.every((s) => /^\d{2}:\d{2}:\d{2}\.\d{3}$/.test(s)), `the started column has milliseconds (${started.join(', ')})`)
  t.match(cell, /"red".*→.*"blue"/, 'what the edit changed')
  t.notOk((await page.locator('tr[data-call="r1"]').innerText()).includes('"x"'), 'no arguments for a call nobody decided on')
  await screenshot(page, 'decisions')
  t.same(problems, [])
})

t.test('a call blocked by a write of an earlier turn links to that turn; the uncertain-writes panel resolves it', async (t) => {
  await post(app, '/v1/runs', { runId: 'doubt-run' }, orchestrator)
  const first = await post(app, '/v1/runs/doubt-run/batches', { batchId: 'turn-1', calls: [{ id: 'w1', name: 'poke', arguments: { k: 'door', secret: CANARY } }] }, orchestrator)
  t.equal(first.body.results[0].status, 'uncertain')
  const second = await post(app, '/v1/runs/doubt-run/batches', { batchId: 'turn-2', calls: [{ id: 'w2', name: 'poke', arguments: { k: 'door', secret: CANARY } }] }, orchestrator)
  t.equal(second.body.results[0].status, 'blocked')

  const { page, problems } = await openBrowser(t)
  await signIn(page, base, 'acme-ops-orchestrator')
  await page.goto(`${base}/ui/#/runs/doubt-run/batches/turn-2`)
  const link = page.locator('tr[data-call="w2"] a.blocked-by')
  await link.waitFor()
  t.match(await link.innerText(), /blocked by w1 \(batch turn-1\)/)
  await link.click()
  await page.waitForSelector('tr[data-call="w1"]')
  t.match(page.url(), /#\/runs\/doubt-run\/batches\/turn-1$/, 'the link leads to the earlier turn')

  await page.goto(`${base}/ui/#/runs/doubt-run`)
  const row = page.locator('.uncertain-panel tr[data-call="w1"]')
  await row.waitFor()
  t.match(await row.innerText(), /w1\s+poke\s+turn-1/)
  await screenshot(page, 'uncertain')
  await row.locator('button.recheck').click()
  await row.locator('.outcome').filter({ hasText: /\S/ }).waitFor()
  t.match(await row.locator('.outcome').innerText(), /no_status_url/, 'a recheck without a status URL says so')
  await row.locator('select').selectOption('committed')
  await row.locator('button.resolve').click()
  await page.waitForSelector('.uncertain-panel >> text=None: every write of this run has a known outcome.')
  const left = await app.inject({ method: 'GET', url: '/v1/runs/doubt-run/uncertain', headers: orchestrator })
  t.strictSame(left.json().uncertain, [], 'resolved through the API')
  t.notOk((await page.content()).includes(CANARY), 'no arguments in the panel')
  t.same(problems.filter((p) => !/409/.test(p)), [], 'nothing failed but the refused recheck')
})

t.test('an operator key signs in to the runs and reads the summary; the navigation is hidden while signed out', async (t) => {
  const { page, problems } = await openBrowser(t)
  await page.goto(`${base}/ui/`)
  await page.waitForSelector('#sign-in')
  t.equal(await page.locator('#nav').evaluate((n) => getComputedStyle(n).display), 'none', 'no navigation before signing in')
  await page.fill('#key', 'acme-ops-operator-key')
  await page.click('#sign-in button[type=submit]')
  await page.waitForSelector('table.runs')
  await page.click('#nav a[href="#/summary"]')
  await page.waitForSelector('table.summary')
  t.match(page.url(), /#\/summary$/)
  t.not(await page.locator('#nav').evaluate((n) => getComputedStyle(n).display), 'none', 'navigation once signed in')
  await page.click('#sign-out')
  await page.waitForSelector('#sign-in:not([hidden])')
  t.equal(await page.locator('#nav').evaluate((n) => getComputedStyle(n).display), 'none', 'hidden again after signing out')
  t.same(problems.filter((p) => !/403/.test(p)), [], 'nothing failed but the refused reads of other roles')
})

t.test('at 800 px the timeline fits without scrolling, its text is 13 px or more, a blocked-only epoch has its label and repeat marks sit in their own column', async (t) => {
  await post(app, '/v1/runs', { runId: 'narrow-run', events: 'lifecycle' }, orchestrator)
  const look = (id: string, x = 7) => ({ id, name: 'look', arguments: { x } })
  const res = await post(app, '/v1/runs/narrow-run/batches', {
    batchId: 'turn-2',
    calls: [look('r1'), look('r2'), look('r3'), { id: 'w1', name: 'poke', arguments: { k: 'a' } }, { id: 'w2', name: 'poke', arguments: { k: 'b' } }, look('r4', 8), { id: 'x1', name: 'fly', arguments: {} }]
  }, orchestrator)
  t.strictSame(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok', 'uncertain', 'blocked', 'ok', 'rejected'])
  const { page, problems } = await openBrowser(t)
  await page.setViewportSize({ width: 800, height: 900 })
  await signIn(page, base, 'acme-ops-orchestrator')
  await page.goto(`${base}/ui/#/runs/narrow-run/batches/turn-2`)
  await page.waitForSelector('svg.timeline')
  const fits = await page.evaluate(() => { const w = document.querySelector('.timeline-wrap')!; return { scroll: w.scrollWidth, client: w.clientWidth } })
  t.ok(fits.scroll <= fits.client, `no horizontal scrolling (${fits.scroll} ≤ ${fits.client})`)
  const sizes = await page.$$eval('svg.timeline text', (ts) => ts.map((x) => Number.parseFloat(getComputedStyle(x).fontSize)))
  t.ok(sizes.length > 0 && sizes.every((s) => s >= 13), `chart text at 13 px or more (${[...new Set(sizes)].join(', ')})`)

  const labels = await page.$$eval('svg.timeline g.epoch', (gs) => gs.map((g) => [g.getAttribute('data-epoch'), g.textContent]))
  const blockedEpoch = res.body.results[4].details.epoch
  t.ok(labels.some(([e, text]) => e === String(blockedEpoch) && text === `epoch ${String(blockedEpoch)}`), `the blocked call's epoch ${String(blockedEpoch)} has its label (${JSON.stringify(labels)})`)

  const labelBoxes = await page.locator('svg.timeline .epoch-label').evaluateAll((ls) => ls.map((l) => { const b = (l as unknown as { getBBox (): { x: number, y: number, width: number, height: number } }).getBBox(); return { x: b.x, y: b.y, w: b.width, h: b.height } }))
  const overlap = (a: { x: number, y: number, w: number, h: number }, b: typeof a): boolean => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h
  t.ok(labelBoxes.every((a, i) => labelBoxes.every((b, j) => i === j || !overlap(a, b))), `epoch labels do not overlap (${JSON.stringify(labelBoxes)})`)
  const box = (el: unknown): { x: number, width: number } => { const b = (el as { getBBox (): { x: number, width: number } }).getBBox(); return { x: b.x, width: b.width } }
  const mark = await page.locator('g.row[data-call="r3"] .repeat-mark').evaluate(box)
  const bands = await page.locator('svg.timeline g.epoch rect').evaluateAll((rs) => rs.map((r) => { const b = (r as unknown as { getBBox (): { x: number, width: number } }).getBBox(); return b.x + b.width }))
  t.ok(bands.every((right) => mark.x >= right), `the repeat mark (x ${mark.x}) is right of every epoch band (${bands.join(', ')})`)
  const rejected = await page.locator('g.row[data-call="x1"] .mark').evaluate(box)
  const label = await page.locator('g.row[data-call="x1"] .status-label').evaluate(box)
  t.ok(rejected.x >= label.x + label.width, `the rejected mark (x ${rejected.x}) is clear of its status label (ends at ${label.x + label.width})`)
  t.same(problems, [])
})
