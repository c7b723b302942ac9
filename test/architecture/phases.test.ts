/**
 * The batch's phases hold no non-null assertion (`x!`): a per-call entry
 * the batch's own steps must have filled is read with `callAt` (a missing
 * one is thrown as the engine's bug it is), and anything else that may be
 * absent is checked. Found by the TypeScript parser, so neither `!==` nor a
 * `!` in a string or a comment counts.
 */
import { readFile, readdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import ts from 'typescript'

const PHASES = fileURLToPath(new URL('../../src/batch/phases/', import.meta.url))

/** Where `text` asserts non-null: `line: text` of each. */
export function nonNullAssertions (name: string, text: string): string[] {
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const found: string[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isNonNullExpression(node)) found.push(`${name}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText()}`)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

t.test('the finder tells an assertion from a comparison, a string and a comment', async (t) => {
  t.same(nonNullAssertions('a.ts', 'const a = [1]\nconst b = a[0]!.toFixed()\n'), ['a.ts:2: a[0]!'])
  t.same(nonNullAssertions('b.ts', "const a: number | undefined = 1\nif (a !== undefined && a != null) console.log('x!', a) // y!.z\n"), [])
})

t.test('no file of the batch phases asserts non-null', async (t) => {
  const files = (await readdir(PHASES)).filter((f) => f.endsWith('.ts'))
  t.ok(files.length >= 5, `${files.length} phase files read`)
  const found = (await Promise.all(files.map(async (f) => nonNullAssertions(f, await readFile(`${PHASES}${f}`, 'utf8'))))).flat()
  t.same(found, [], 'no `!` assertion')
})
