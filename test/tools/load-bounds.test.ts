import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { readToolsFile } from '../../src/tools/load.js'

t.test('a YAML tools file that expands aliases exponentially ("billion laughs") is refused, not expanded', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-yaml-'))
  let doc = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
  for (let i = 1; i <= 9; i++) doc += `a${i}: &a${i} [${Array(9).fill(`*a${i - 1}`).join(',')}]\n`
  doc += 'tools: *a9\n'
  const path = join(dir, 'tools.yaml')
  await writeFile(path, doc)
  await t.rejects(readToolsFile(path), /TOOLGATE_TOOLS_FILE .*tools\.yaml: .*(alias|Excessive)/i)
})
