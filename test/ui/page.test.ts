/**
 * The operator's page at /ui in a real browser (chromium): signing in, a
 * run's batches, a batch's timeline with an uncertain write that blocked a
 * later one, and another tenant seeing none of it.
 */
import { mkdir } from 'node:fs/promises'
import t from 'tap'
import { buildTestApp, post, sleep, startExecutor, tool, type ExecutorCall } from '../helper.js'
import { UI_CSP } from '../../routes/ui.js'
import { openBrowser, signIn } from './browser.js'

// Functions handed to page.evaluate run in the page, where these exist; tsc checks this file without the DOM library.
declare const sessionStorage: { getItem (key: string): string | null }
declare const document: { getElementById (id: string): { textContent: string | null } | null }
declare function getComputedStyle (element: unknown): { fill: string }
interface Shape { getBBox (): { x: number, y: number, width: number, height: number } }
interface Path { getTotalLength (): number, getPointAtLength (at: number): { x: number, y: number } }

const ex = await startExecutor(t)
// Real durations, so the bars have lengths to compare.
const slow = (ms: number) => async (call: ExecutorCall) => {
  await sleep(ms)
  return { content: `did ${call.callId}` }
}
ex.on('look', slow(40))
ex.on('poke', async (call: ExecutorCall, _req, reply) => {
  await sleep(30)
  // The first write's outcome is unknown: a 5xx after it was sent.
  if (call.callId === 'w1') return reply.code(502).send({ error: 'upstream went away' })
  return { content: 'poked' }
})
const keysDoc = {
  keys: [
    { key: 'acme-page-key', tenant: 'acme', roles: ['orchestrator'] },
    { key: 'rival-page-key', tenant: 'rival', roles: ['orchestrator'] }
  ]
}
// Validation's wall-clock budget (TOOLGATE_MAX_VALIDATION_MS, 50 ms) can reject a call on a loaded machine; these tests are not about it.
const config = { maxValidationMs: 60_000 }
const { app } = await buildTestApp(t, { keysDoc, config, tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)] })
const base = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1')
const acme = { authorization: 'Bearer acme-page-key' }
const CANARY = 'canary-secret-argument-91c2'

// Lifecycle events: the host (and so the page) sees which call a repeat was detected on.
await post(app, '/v1/runs', { runId: 'demo-run', events: 'lifecycle' }, acme)
const look = (id: string, x: number) => ({ id, name: 'look', arguments: { x, secret: CANARY } })
const batch = await post(app, '/v1/runs/demo-run/batches', {
  batchId: 'turn-1',
  calls: [
    look('r1', 1), look('r2', 1), look('r3', 1),
    { id: 'w1', name: 'poke', arguments: { k: 'door', secret: CANARY } },
    { id: 'w2', name: 'poke', arguments: { k: 'window', secret: CANARY } },
    look('r4', 2),
    { id: 'x1', name: 'fly', arguments: {} }
  ]
}, acme)
t.strictSame(batch.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok', 'uncertain', 'blocked', 'ok', 'rejected'], 'the batch the page shows')

t.test('the page is served with a strict Content-Security-Policy and no key', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/ui/' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-security-policy'], UI_CSP)
  t.match(UI_CSP, /default-src 'none'/)
  t.notMatch(UI_CSP, /unsafe/)
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal((await app.inject({ method: 'GET', url: '/ui' })).headers.location, 'ui/')
  t.equal((await app.inject({ method: 'GET', url: '/ui/app.js' })).headers['content-type'], 'text/javascript; charset=utf-8')
  t.equal((await app.inject({ method: 'GET', url: '/ui/nothing.js' })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: '/ui/..%2Fpackage.json' })).statusCode, 404)
  const again = await app.inject({ method: 'GET', url: '/ui/app.css', headers: { 'if-none-match': String((await app.inject({ method: 'GET', url: '/ui/app.css' })).headers.etag) } })
  t.equal(again.statusCode, 304)
})

t.test('signed in, the timeline shows each call in source order with bars, epochs, a blocker arrow and the repeat mark', async (t) => {
  const { page, requests, problems } = await openBrowser(t)
  await signIn(page, base, 'acme-page-key')
  t.equal(await page.evaluate(() => sessionStorage.getItem('toolgate.apiKey')), 'acme-page-key', 'the key is kept in the tab')
  const row = page.locator('tr[data-run="demo-run"]')
  t.match(await row.innerText(), /demo-run\s+active\s+1\s+7\s+0/, 'the run with its state and counters')
  await row.locator('a').click()
  await page.waitForSelector('tr[data-batch="turn-1"]')
  t.match(await page.locator('tr[data-batch="turn-1"]').innerText(), /1\s+turn-1\s+completed\s+7/)
  await page.click('tr[data-batch="turn-1"] a')
  await page.waitForSelector('svg.timeline')

  const rows = await page.$$eval('svg.timeline g.row', (gs) => gs.map((g) => [g.getAttribute('data-call'), g.getAttribute('data-status')]))
  t.strictSame(rows, [['r1', 'ok'], ['r2', 'ok'], ['r3', 'ok'], ['w1', 'uncertain'], ['w2', 'blocked'], ['r4', 'ok'], ['x1', 'rejected']], 'one row per call, in source order')

  const bars = Object.fromEntries(await page.$$eval('svg.timeline g.row', (gs) => gs.map((g) => {
    const bar = g.querySelector('rect.bar')
    return [g.getAttribute('data-call'), bar === null ? null : { x: Number(bar.getAttribute('x')), w: Number(bar.getAttribute('width')), fill: getComputedStyle(bar).fill }]
  }))) as Record<string, { x: number, w: number, fill: string } | null>
  for (const id of ['r1', 'r2', 'r3', 'w1', 'r4']) t.ok(bars[id] !== null && bars[id]!.w > 2, `${id} has a bar of some length`)
  t.equal(bars.w2, null, 'the blocked write never ran: a mark, no bar')
  t.equal(bars.x1, null, 'the rejected call never ran: a mark, no bar')
  const end = (id: string) => bars[id]!.x + bars[id]!.w
  t.ok(bars.r2!.x < end('r1') && bars.r1!.x < end('r2'), 'the reads of epoch 0 overlap')
  t.ok(bars.w1!.x >= Math.max(end('r1'), end('r2'), end('r3')) - 1, 'the write starts after epoch 0 settled')
  t.ok(bars.r4!.x >= end('w1') - 1, 'the last read starts after the write')
  t.not(bars.w1!.fill, bars.r1!.fill, 'uncertain and ok are coloured apart')

  const epochs = await page.$$eval('svg.timeline g.epoch', (gs) => gs.map((g) => g.getAttribute('data-epoch')))
  t.ok(epochs.length >= 3 && epochs[0] === '0', `epochs are shaded (${epochs.join(',')})`)

  const arrow = page.locator('svg.timeline path.blocker-arrow')
  t.equal(await arrow.count(), 1, 'one blocker arrow')
  t.equal(await arrow.getAttribute('data-from'), 'w1')
  t.equal(await arrow.getAttribute('data-to'), 'w2')
  const [x0, y0] = (await arrow.getAttribute('d'))!.match(/^M ([\d.]+) ([\d.]+)/)!.slice(1).map(Number) as [number, number]
  // SVG geometry objects do not cross to the test as they are: their numbers do.
  const box = (r: unknown) => { const b = (r as Shape).getBBox(); return { x: b.x, y: b.y, width: b.width, height: b.height } }
  const w1Box = await page.locator('g.row[data-call="w1"] rect.bar').evaluate(box)
  const w2Box = await page.locator('g.row[data-call="w2"] .mark').evaluate(box)
  t.ok(Math.abs(x0 - (w1Box.x + w1Box.width)) <= 2 && y0 > w1Box.y && y0 < w1Box.y + w1Box.height, `the arrow leaves the end of the uncertain write (${x0},${y0} against ${JSON.stringify(w1Box)})`)
  const tip = await arrow.evaluate((p) => { const path = p as unknown as Path; const p2 = path.getPointAtLength(path.getTotalLength()); return { x: p2.x, y: p2.y } })
  t.ok(tip.y > w2Box.y && tip.y < w2Box.y + w2Box.height && tip.x <= w2Box.x + 1, `and points at the blocked write (${JSON.stringify(tip)} against ${JSON.stringify(w2Box)})`)

  t.equal(await page.locator('g.row[data-call="r3"] .repeat-mark').getAttribute('data-action'), 'advisory', 'the repeat advisory is marked on the third identical call')
  t.match(await page.locator('.policy').innerText(), /look/, 'its policy message is shown')

  const html = await page.content()
  t.notOk(html.includes(CANARY), 'no arguments anywhere on the page')
  t.same(problems, [], 'no script errors and no Content-Security-Policy violations')
  t.ok(requests.every((u) => u.startsWith(base)), 'the page asked nothing but toolgate')

  if (process.env.TOOLGATE_UPDATE_SCREENSHOTS === '1') {
    await mkdir(new URL('../../docs/images/', import.meta.url), { recursive: true })
    await page.locator('main').screenshot({ path: new URL('../../docs/images/timeline.png', import.meta.url).pathname })
  }
})

t.test("another tenant's key sees none of it", async (t) => {
  const { page, problems } = await openBrowser(t)
  await signIn(page, base, 'rival-page-key')
  t.equal(await page.locator('tr[data-run]').count(), 0, 'no runs listed')
  t.match(await page.locator('table.runs').innerText(), /No runs yet/)
  await page.goto(`${base}/ui/#/runs/demo-run/batches/turn-1`)
  await page.waitForSelector('#view .error')
  t.equal(await page.locator('#view .error').getAttribute('data-code'), 'run_not_found')
  t.equal(await page.locator('svg.timeline').count(), 0)
  await page.goto(`${base}/ui/#/runs/demo-run`)
  await page.waitForSelector('#view .error[data-code="run_not_found"]')
  t.notOk((await page.content()).includes('turn-1'))
  t.equal(problems.filter((p) => !/404/.test(p)).length, 0, 'nothing failed but the refused reads')
})

t.test('a wrong key is refused at sign-in and nothing is kept', async (t) => {
  const { page } = await openBrowser(t)
  await page.goto(`${base}/ui/`)
  await page.fill('#key', 'not-a-key')
  await page.click('#sign-in button[type=submit]')
  await page.waitForFunction(() => document.getElementById('sign-in-error')?.textContent !== '')
  t.equal(await page.locator('#sign-in-error').innerText(), 'That key is not valid.')
  t.equal(await page.evaluate(() => sessionStorage.getItem('toolgate.apiKey')), null)
})

t.test('a malformed % escape in the location hash says there is no such page, and the page goes on working', async (t) => {
  const { page, problems } = await openBrowser(t)
  await signIn(page, base, 'acme-page-key')
  await page.goto(`${base}/ui/#/runs/%E0%A4%A`)
  await page.waitForSelector('#view .error')
  t.equal(await page.locator('#view .error').innerText(), 'No such page.')
  t.ok(await page.locator('nav').isVisible(), 'the page is still there')
  await page.goto(`${base}/ui/#/runs/demo-run`)
  await page.waitForSelector('a[href*="turn-1"]')
  t.strictSame(problems, [], 'nothing failed in the page')
})
