/**
 * docs/architecture.md's "Where each behaviour is read": every file a row
 * names exists, no row names more than four, and each of the behaviours
 * the table is for (exact repeats and run limits, approvals, retry safety,
 * loop detection) is read in one row, not spread over several.
 */
import { access, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const root = fileURLToPath(new URL('../../', import.meta.url))
const MOST_FILES = 4
/** The behaviours each read in one row, as a row's first cell starts. */
const BEHAVIOURS = ['exact repeats and run limits', 'approvals', 'retry safety', 'loop detection']

interface Row { behaviour: string, files: string[] }

/** The table's rows: each one's first cell, and the files (code spans naming a source file) of its second. */
function rowsOf (page: string): Row[] {
  const start = page.indexOf('## Where each behaviour is read\n')
  if (start < 0) return []
  const end = page.indexOf('\n## ', start + 1)
  const section = page.slice(start, end < 0 ? undefined : end)
  const rows: Row[] = []
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim())
    // `| behaviour | files |`: a line starting with a pipe, with two cells between the outer ones.
    if (cells.length !== 4 || cells[0] !== '' || cells[1] === 'behaviour' || cells[1]!.startsWith('---')) continue
    const files = [...new Set([...cells[2]!.matchAll(/`((?:src|routes|schemas)\/[^`\s]+\.ts)`/g)].map((m) => m[1]!))]
    rows.push({ behaviour: cells[1]!, files })
  }
  return rows
}

const page = await readFile(`${root}docs/architecture.md`, 'utf8')
const rows = rowsOf(page)

t.test('the table has rows, each naming at least one file', async (t) => {
  t.ok(rows.length >= BEHAVIOURS.length, `${rows.length} rows`)
  for (const row of rows) t.ok(row.files.length > 0, `"${row.behaviour}" names a file`)
})

t.test('no row names more than four files', async (t) => {
  for (const row of rows) t.ok(row.files.length <= MOST_FILES, `"${row.behaviour}": ${row.files.length} files (${row.files.join(', ')})`)
})

t.test('every file the table names exists', async (t) => {
  for (const file of new Set(rows.flatMap((r) => r.files))) {
    await t.resolves(access(`${root}${file}`), file)
  }
})

t.test('exact repeats and run limits, approvals, retry safety and loop detection are each read in one row', async (t) => {
  for (const behaviour of BEHAVIOURS) {
    const found = rows.filter((r) => r.behaviour.startsWith(behaviour))
    t.equal(found.length, 1, `one row for ${behaviour}: ${found.map((r) => `"${r.behaviour}"`).join(', ')}`)
  }
})

t.test('a row of five files, or of a file that is not there, is caught', async (t) => {
  const files = ['a', 'b', 'c', 'd', 'e'].map((n) => `\`src/${n}.ts\``).join(', ')
  const made = rowsOf(`## Where each behaviour is read\n\n| behaviour | files |\n| --- | --- |\n| made up | ${files} (\`maxTurns\`, \`src/a.ts\`) |\n`)
  t.same(made, [{ behaviour: 'made up', files: ['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/d.ts', 'src/e.ts'] }], 'five distinct files read, not the other code spans')
  await t.rejects(access(`${root}src/a.ts`), 'a file that is not there is found missing')
})
