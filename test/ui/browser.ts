/**
 * A real browser for the page's tests: Debian's chromium driven by
 * playwright-core, headless. One chromium per test file, started by the
 * first test that asks and closed when the file's tests are done; each test
 * gets a fresh browser context of its own (its own storage, cookies and
 * cache, as a fresh profile would be), closed after the test. `.ci/run`
 * installs chromium when it is missing; without it these tests fail
 * rather than skip, so a CI that lost it shows.
 */
import tap from 'tap'
import { type Browser as Chromium, type BrowserContext, type Page, chromium } from 'playwright-core'

type Tap = { teardown: (fn: () => unknown) => void }

export const CHROMIUM = process.env.TOOLGATE_TEST_CHROMIUM ?? '/usr/bin/chromium'

export interface Browser {
  context: BrowserContext
  page: Page
  /** Every URL the page requested. */
  requests: string[]
  /** Console errors and Content-Security-Policy violations the page reported. */
  problems: string[]
}

let started: Promise<Chromium> | undefined

/** The file's chromium: launched on first use, closed when the file's tests end. */
function shared (): Promise<Chromium> {
  if (started === undefined) {
    started = chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      // --no-sandbox: CI runs as root, where chromium's sandbox cannot start.
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
      timeout: 60_000
    })
    const launched = started
    tap.teardown(async () => { await (await launched).close() })
  }
  return started
}

export async function openBrowser (t: Tap): Promise<Browser> {
  const context = await (await shared()).newContext({ viewport: { width: 1180, height: 900 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  page.setDefaultTimeout(20_000)
  const requests: string[] = []
  const problems: string[] = []
  page.on('request', (r) => { requests.push(r.url()) })
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()) })
  page.on('pageerror', (err) => { problems.push(err.message) })
  return { context, page, requests, problems }
}

/** Signs in on the page with a key and waits for the runs list. */
export async function signIn (page: Page, base: string, key: string): Promise<void> {
  await page.goto(`${base}/ui`)
  await page.fill('#key', key)
  await page.click('#sign-in button[type=submit]')
  await page.waitForSelector('table.runs')
}
