/**
 * Every `sh` block of the README and docs/ either runs here as written, on
 * 127.0.0.1 ports this test picks, or is listed with the reason it does not
 * (a model API key, a Docker engine, the suite itself, an hour of bench). A
 * new block that is neither fails the test.
 *
 * What "as written" allows: `npm install` and `npm run build` are taken as
 * done (the suite runs after both), `npm start` is its script (checked
 * against package.json), servers a block starts go to the background and are
 * waited for, `localhost:8080` and the executor's `9000` become free ports,
 * the files a command names (`tools.yaml`, `keys.yaml`, `mcp-tools.json`) are
 * written from the blocks the page shows for them, and `curl -s` fails on an
 * error status (`--fail-with-body`).
 */
import { spawn } from 'node:child_process'
import { access, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { freePort } from '../helper.js'

t.setTimeout(300_000)

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const START_SCRIPT = 'node --max-semi-space-size=64 dist/src/server.js'

interface Block { page: string, line: number, text: string, lang: string }

async function blocksOf (page: string): Promise<Block[]> {
  const blocks: Block[] = []
  const lines = (await readFile(join(ROOT, page), 'utf8')).split('\n')
  let open: Block | null = null
  for (const [i, line] of lines.entries()) {
    if (open === null) {
      const m = /^```(\w+)/.exec(line)
      if (m !== null) open = { page, line: i + 1, text: '', lang: m[1]! }
    } else if (line.startsWith('```')) {
      blocks.push(open)
      open = null
    } else {
      open.text += line + '\n'
    }
  }
  return blocks
}

const pages = ['README.md', ...(await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
const all = (await Promise.all(pages.map(blocksOf))).flat()
const shell = all.filter((b) => b.lang === 'sh' || b.lang === 'bash' || b.lang === 'shell')

/** One block of a page, found by what it holds. */
interface Claim { page: string, has: string }
/** A block run in a scenario, and what its output must show. */
interface Step extends Claim { expect?: RegExp[] }

/** Blocks not run here, each with why. */
const NOT_RUN: Array<Claim & { why: string }> = [
  { page: 'README.md', has: 'npm install && npm test', why: 'the whole suite, this test among it' },
  { page: 'docs/testing.md', has: 'npm install && npm test', why: 'the whole suite, this test among it' },
  { page: 'README.md', has: 'OPENAI_API_KEY=sk-...', why: 'needs a model API key; test/formats/sdk-loops.test.ts runs the same loop against a scripted model' },
  { page: 'docs/python.md', has: 'OPENAI_API_KEY=sk-...', why: 'needs a model API key; test/examples/python.test.ts runs the same script against a scripted model' },
  { page: 'docs/getting-started.md', has: 'docker build', why: 'no Docker engine here; test/server/dockerfile.test.ts runs what the image runs' },
  { page: 'docs/getting-started.md', has: 'docker run -p 8080:8080', why: 'no Docker engine here' },
  { page: 'docs/performance.md', has: 'git worktree add', why: 'compares two builds under load for minutes' },
  { page: 'docs/performance.md', has: 'instructions.js', why: 'counts instructions under valgrind for about ten minutes' },
  { page: 'docs/performance.md', has: 'guard-cost.js', why: 'counts instructions under valgrind, 18 processes of some 5,000 batches each for about an hour' },
  { page: 'docs/performance.md', has: 'run.js --mcp-endpoint', why: 'the /mcp bench rows, minutes under load; test/bench/smoke.test.ts measures the same rows in their smoke form' },
  { page: 'docs/performance.md', has: 'compare-mcp.js', why: 'compares two builds\' /mcp for minutes; test/bench/smoke.test.ts runs it at tiny counts' },
  { page: 'docs/performance.md', has: 'mcp-steps.js', why: 'times 3,000 /mcp calls step by step, under a minute under load; test/bench/smoke.test.ts runs it at tiny counts' }
]

interface Scenario {
  name: string
  /** HOST for the processes: unset leaves the service's own default. */
  host?: string
  /** Files the commands name, written from the page's block that follows a line ending in "`name`:". */
  files?: Array<{ name: string, page: string }>
  steps: Step[]
  /** Extra commands (not from the docs) that show the servers a block started work. */
  check?: { command: string, expect: RegExp[] }
}

const LOOK = `curl -sS --fail-with-body -X POST 127.0.0.1:$PORT/v1/runs -H 'content-type: application/json' -d '{"runId": "check-1"}' >/dev/null
curl -sS --fail-with-body -X POST 127.0.0.1:$PORT/v1/runs/check-1/batches -H 'content-type: application/json' -d '{"calls": [{"id": "c1", "name": "look", "arguments": {"x": 1, "y": 2}}]}'`

const SCENARIOS: Scenario[] = [
  {
    name: 'the demo, the curl tour and an approval',
    steps: [
      { page: 'README.md', has: 'npm install && npm start' },
      { page: 'docs/getting-started.md', has: `-d '{"runId": "demo-1"}'`, expect: [/"runId":"demo-1","state":"active"/] },
      { page: 'docs/getting-started.md', has: 'curl -s localhost:8080/v1/runs/demo-1/tools', expect: [/"name":"look"/] },
      { page: 'docs/getting-started.md', has: '"batchId": "turn-1",\n  "calls": [\n    { "id": "call_1", "name": "look", "arguments": "', expect: [/"callId":"call_3","name":"construct","status":"ok"/, /"reason":"unknown_tool"/] },
      { page: 'docs/getting-started.md', has: 'demo-1/receipts', expect: [/"status":"committed"/, /"runId":"demo-1"/] },
      { page: 'docs/getting-started.md', has: 'PAINT_URL=', expect: [/"state":"awaiting_approval"/, /"callId":"call_2","tool":"repaint"/] },
      { page: 'docs/getting-started.md', has: 'demo-2/batches/turn-1/approvals', expect: [/"state":"completed"/, /"callId":"call_2","name":"repaint","status":"ok"/] },
      { page: 'docs/metrics.md', has: "Accept: application/openmetrics-text", expect: [/^# TYPE toolgate_batches_total counter$/m, /^# TYPE toolgate_batches counter$/m, /^# EOF$/m, /^\d+ bytes gzipped$/m] }
    ]
  },
  {
    name: 'your own tools with keys, and a key as the access page sends it',
    host: '127.0.0.1',
    files: [{ name: 'tools.yaml', page: 'docs/getting-started.md' }, { name: 'keys.yaml', page: 'docs/getting-started.md' }],
    steps: [
      { page: 'docs/getting-started.md', has: 'TOOLGATE_API_KEYS_FILE=keys.yaml npm start' },
      { page: 'docs/getting-started.md', has: '"runId": "mine-1"', expect: [/"callId":"call_1","name":"look","status":"ok"/] },
      { page: 'docs/access.md', has: 'Bearer 3b1f0c9e7d2a48c6b5e1f7a0d9c4e2b8', expect: [/"state":"active"/] }
    ]
  },
  {
    name: 'the bundled tools file with the example executor on its own',
    steps: [{ page: 'docs/getting-started.md', has: 'TOOLGATE_TOOLS_FILE=examples/tools.json npm start' }],
    check: { command: LOOK, expect: [/"status":"ok"/] }
  },
  {
    name: 'the executor protocol page\'s example executor',
    steps: [{ page: 'docs/executor-protocol.md', has: 'TOOLGATE_TOOLS_FILE=examples/tools.json npm start' }],
    check: { command: LOOK, expect: [/"status":"ok"/] }
  },
  {
    name: 'an MCP server as executor',
    files: [{ name: 'mcp-tools.json', page: 'docs/getting-started.md' }],
    steps: [
      { page: 'docs/getting-started.md', has: 'TOOLGATE_TOOLS_FILE=mcp-tools.json npm start' },
      { page: 'docs/getting-started.md', has: 'curl -s localhost:8080/v1/mcp-servers/files', expect: [/"state":"ready"/, /"callId":"call_2","name":"files_read_text_file","status":"ok","content":"\{\\"content\\":\\"hello\\"\}"/] }
    ]
  }
]

function claims (claim: Claim): Block[] {
  return shell.filter((b) => b.page === claim.page && b.text.includes(claim.has))
}

t.test('package.json\'s start script is what this test runs for npm start', async (t) => {
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'))
  t.equal(pkg.scripts.start, START_SCRIPT)
  t.equal(pkg.scripts.prestart, 'npm run build')
})

t.test('every shell block of the README and docs/ is run here or listed with why not', async (t) => {
  const claimed = new Map<Block, string>()
  for (const claim of [...NOT_RUN, ...SCENARIOS.flatMap((s) => s.steps)]) {
    const found = claims(claim)
    t.equal(found.length, 1, `${claim.page}: exactly one block holds ${JSON.stringify(claim.has)}`)
    for (const b of found) {
      t.notOk(claimed.has(b), `${b.page}:${b.line} is claimed once`)
      claimed.set(b, claim.has)
    }
  }
  for (const b of shell) t.ok(claimed.has(b), `${b.page}:${b.line} is run or listed: ${b.text.split('\n')[0]!}`)
})

/** The file a page shows after a line ending in "`name`:" (the next fenced block). */
async function fileFromPage (page: string, name: string): Promise<string> {
  const lines = (await readFile(join(ROOT, page), 'utf8')).split('\n')
  const at = lines.findIndex((l) => l.includes(`\`${name}\``) && /:\s*$/.test(l))
  if (at < 0) throw new Error(`${page} shows no \`${name}\``)
  const block = (await blocksOf(page)).find((b) => b.line > at + 1)
  if (block === undefined) throw new Error(`${page} has no block after \`${name}\``)
  return block.text
}

interface Ports { toolgate: number, executor: number }

/** The block as this test runs it (see the header). */
export function rewrite (text: string, ports: Ports, files: Map<string, string>): string {
  let out = text
  for (const [name, path] of files) out = out.replace(new RegExp(`(?<![\\w/.-])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w.-])`, 'g'), path)
  out = out
    .replace(/localhost:8080|127\.0\.0\.1:8080/g, `127.0.0.1:${ports.toolgate}`)
    .replace(/\b9000\b/g, String(ports.executor))
    .replace(/\bcurl -s /g, 'curl -sS --fail-with-body ')
  const lines: string[] = []
  for (const raw of out.split('\n')) {
    let line = raw.replace(/^npm install && /, '')
    if (line.trim() === 'npm run build') continue
    const server = /(?:^|\s)(npm start|node dist\/examples\/executor\.js)(?:\s|$)/.exec(line.replace(/\s+#.*$/, ''))
    if (server !== null) {
      line = line.replace(/\s+#.*$/, '').replace(/\s*&\s*$/, '').replace(/\bnpm start\b/, START_SCRIPT)
      const waitFor = server[1] === 'npm start' ? `http://127.0.0.1:${ports.toolgate}/readyz` : `http://127.0.0.1:${ports.executor}/`
      lines.push(`${line} >>"$LOGS/servers.log" 2>&1 &`, 'echo $! >>"$LOGS/pids"', `wait_http ${waitFor}`)
    } else {
      lines.push(line)
    }
  }
  return lines.join('\n')
}

async function runScenario (t: Test, scenario: Scenario): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-docs-'))
  const ports = { toolgate: await freePort(), executor: await freePort() }
  const files = new Map<string, string>([['examples/tools.json', join(dir, 'examples-tools.json')]])
  await writeFile(files.get('examples/tools.json')!, rewrite(await readFile(join(ROOT, 'examples/tools.json'), 'utf8'), ports, new Map()))
  for (const f of scenario.files ?? []) {
    const path = join(dir, f.name)
    await writeFile(path, rewrite(await fileFromPage(f.page, f.name), ports, new Map()))
    files.set(f.name, path)
  }
  const parts = [
    'set -euo pipefail',
    `cd ${JSON.stringify(ROOT)}`,
    'wait_http () { for _ in $(seq 1 600); do if curl -s -o /dev/null "$1"; then return 0; fi; sleep 0.1; done; echo "nothing answered $1" >&2; return 1; }',
    'trap \'echo "failed in step $STEP" >&2\' ERR'
  ]
  const steps = scenario.steps.map((s) => claims(s)[0]!)
  for (const [i, block] of steps.entries()) {
    parts.push(`STEP=${i}`, `{\n${rewrite(block.text, ports, files)}\n} >"$LOGS/out.${i}" 2>&1`)
  }
  if (scenario.check !== undefined) parts.push('STEP=check', `{\n${scenario.check.command}\n} >"$LOGS/out.check" 2>&1`)
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, LOGS: dir, PORT: String(ports.toolgate), LOG_LEVEL: 'info' }
  if (scenario.host !== undefined) env.HOST = scenario.host
  const child = spawn('bash', ['-c', parts.join('\n')], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  child.stdout.resume()
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  const pids = (await readFile(join(dir, 'pids'), 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number)
  t.teardown(async () => {
    for (const pid of pids) {
      try { process.kill(pid, 'SIGTERM') } catch { /* gone already */ }
    }
    for (const pid of pids) {
      for (let i = 0; i < 100 && alive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 50))
      if (alive(pid)) process.kill(pid, 'SIGKILL')
    }
    await rm(dir, { recursive: true, force: true })
  })
  const read = (name: string): Promise<string> => readFile(join(dir, name), 'utf8').catch(() => '')
  if (code !== 0) {
    const step = /failed in step (\S+)/.exec(stderr)?.[1]
    const failed = step === undefined ? '' : step === 'check' ? 'the check' : `${steps[Number(step)]!.page}:${steps[Number(step)]!.line}`
    t.fail(`the commands failed (exit ${String(code)}) at ${failed}`, { stderr, output: step === undefined ? '' : await read(`out.${step}`), servers: (await read('servers.log')).slice(-4000) })
    return
  }
  for (const [i, step] of scenario.steps.entries()) {
    const output = await read(`out.${i}`)
    for (const re of step.expect ?? []) t.match(output, re, `${step.page}:${steps[i]!.line} shows ${String(re)}`)
  }
  if (scenario.check !== undefined) {
    const output = await read('out.check')
    for (const re of scenario.check.expect) t.match(output, re, `the servers it started answer: ${String(re)}`)
  }
}

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const built = await access(join(ROOT, 'dist/src/server.js')).then(() => true, () => false)
for (const scenario of SCENARIOS) {
  t.test(`the documented commands run as written: ${scenario.name}`, { skip: built ? false : 'no dist/: npm run build first (npm test does)' }, async (t) => {
    await runScenario(t, scenario)
  })
}
