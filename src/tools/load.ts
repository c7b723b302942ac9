import { readFile } from 'node:fs/promises'
import { extname } from 'node:path'
import { parse as parseYaml } from 'yaml'

/** Reads a JSON or YAML file (by extension; YAML is a superset of JSON otherwise). */
export async function readStructuredFile (path: string): Promise<unknown> {
  const text = await readFile(path, 'utf8')
  const ext = extname(path).toLowerCase()
  if (ext === '.json') return JSON.parse(text)
  return parseYaml(text, { maxAliasCount: 100 })
}

/** Reads the tools file: `{"tools": [definition, ...]}`. Throws with every problem listed. */
export async function readToolsFile (path: string): Promise<unknown[]> {
  let doc: unknown
  try {
    doc = await readStructuredFile(path)
  } catch (err) {
    throw new Error(`TOOLGATE_TOOLS_FILE ${path}: ${(err as Error).message}`)
  }
  const tools = (doc as { tools?: unknown } | null)?.tools
  if (!Array.isArray(tools)) throw new Error(`TOOLGATE_TOOLS_FILE ${path}: expected an object with a "tools" array`)
  return tools
}
