/**
 * `.ci/run` names the test files it runs again on Node 24 (NODE24_TESTS): a
 * file renamed or split under it would make that pass fail on a missing
 * path only in CI, so every entry must match a test file here.
 */
import { readFile, readdir } from 'node:fs/promises'
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
