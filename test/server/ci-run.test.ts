/**
 * `.ci/run` names the test files it runs again on Node 24 (NODE24_TESTS): a
 * file renamed or split under it would make that pass fail on a missing
 * path only in CI, so every entry must match a test file here. And when a
 * pass fails, its failing assertions are printed again at the script's end.
 */
import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t from 'tap'

const root = join(import.meta.dirname, '..', '..')

/** The entries of the NODE24_TESTS array, comments dropped. */
function node24Entries (script: string): string[] {
  const block = /NODE24_TESTS=\(\n([\s\S]*?)\n\)/.exec(script)?.[1]
  if (block === undefined) throw new Error('.ci/run has no NODE24_TESTS=( … ) list')
  return block.split('\n').flatMap((line) => line.replace(/#.*$/, '').trim().split(/\s+/)).filter((entry) => entry !== '')
}

/** The files an entry names: itself, or what its `*` (within one folder) matches. */
async function matches (entry: string): Promise<string[]> {
  const folder = dirname(entry)
  const name = entry.slice(folder.length + 1)
  const pattern = new RegExp(`^${name.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')}$`)
  const files = await readdir(join(root, folder)).catch(() => [])
  return files.filter((file) => pattern.test(file)).map((file) => `${folder}/${file}`)
}

t.test('every test file .ci/run runs again on Node 24 exists', async (t) => {
  const entries = node24Entries(await readFile(join(root, '.ci', 'run'), 'utf8'))
  t.ok(entries.length > 0, 'the list names files')
  for (const entry of entries) {
    const found = await matches(entry)
    t.ok(found.length > 0 && found.every((f) => f.endsWith('.test.ts')), `${entry} matches test files (${found.join(', ') || 'none'})`)
  }
})

t.test('an entry that matches nothing is caught', async (t) => {
  t.same(await matches('test/store/contract.test.ts'), [], 'the file the store split removed')
  t.ok((await matches('test/store/contract-*.test.ts')).length >= 5, 'the files it became')
})

/** `.ci/run`'s shows_failures function, as written there. */
function showsFailures (script: string): string {
  const fn = /^shows_failures\(\) \{\n[\s\S]*?\n\}$/m.exec(script)?.[0]
  if (fn === undefined) throw new Error('.ci/run has no shows_failures() { … } function')
  return fn
}

t.test('a failing pass prints its failing assertions again at its end; a passing one prints only its output', async (t) => {
  const fn = showsFailures(await readFile(join(root, '.ci', 'run'), 'utf8'))
  const dir = await mkdtemp(join(tmpdir(), 'ci-run-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const run = (command: string): { status: number | null, stdout: string } =>
    spawnSync('bash', ['-c', `set -euo pipefail\nnode24=${dir}\n${fn}\n${command}\necho after`], { encoding: 'utf8' })

  const failing = run(`shows_failures suite bash -c 'echo "ok 1 - fine"; printf "    not ok 2 - the lock is held\\n      ---\\n      at: x.test.ts:5\\n"; for i in $(seq 1 50); do echo "ok $i - later"; done; exit 1'`)
  t.equal(failing.status, 1, 'set -e stops the script on the failed pass')
  t.notMatch(failing.stdout, /after/)
  const tail = failing.stdout.slice(failing.stdout.lastIndexOf('Failed: '))
  t.match(tail, /^Failed: bash -c .*\. Its failing assertions:\n/, 'the end says which pass failed')
  t.match(tail, /not ok 2 - the lock is held\n.*---\n.*at: x\.test\.ts:5/, 'and shows the assertion with its diagnostic')

  const crashed = run("shows_failures suite bash -c 'echo boom; exit 3'")
  t.equal(crashed.status, 1)
  t.match(crashed.stdout, /no "not ok" line/, 'a pass that failed without a failing assertion says so')

  const passing = run("shows_failures suite bash -c 'echo \"ok 1 - fine\"'")
  t.equal(passing.status, 0)
  t.equal(passing.stdout, 'ok 1 - fine\nafter\n')
})
