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
  return (await readToolsDocument(path)).tools
}

/** Reads the tools file whole: its `tools`, and its `mcpServers` (none when absent). */
export async function readToolsDocument (path: string): Promise<{ tools: unknown[], mcpServers: unknown[] }> {
  let doc: unknown
  try {
    doc = await readStructuredFile(path)
  } catch (err) {
    throw new Error(`TOOLGATE_TOOLS_FILE ${path}: ${(err as Error).message}`)
  }
  const tools = (doc as { tools?: unknown } | null)?.tools
  if (!Array.isArray(tools)) throw new Error(`TOOLGATE_TOOLS_FILE ${path}: expected an object with a "tools" array`)
  const mcpServers = (doc as { mcpServers?: unknown }).mcpServers ?? []
  if (!Array.isArray(mcpServers)) throw new Error(`TOOLGATE_TOOLS_FILE ${path}: "mcpServers" must be an array`)
  return { tools, mcpServers }
}
