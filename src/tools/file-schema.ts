import { ToolsFile } from '../../schemas/tools-file.js'

/** Where the JSON Schema of the tools file is checked in, from the repository's root. */
export const TOOLS_FILE_SCHEMA_PATH = 'schemas/tools-file.schema.json'

/**
 * The JSON Schema (draft 2020-12) of the tools file, for editors: the
 * TypeBox schemas the loader validates with, as plain JSON. The tool
 * definition is written once under `$defs` and referred to, and TypeBox's
 * own `$id`s (names inside the app's schema set) are left out.
 */
export function renderToolsFileSchema (): string {
  const plain = JSON.parse(JSON.stringify(ToolsFile), (key, value: unknown) => (key === '$id' ? undefined : value)) as Record<string, unknown> & { properties: { tools: Record<string, unknown> } }
  const { items: toolDefinition, ...tools } = plain.properties.tools
  const schema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'toolgate tools file',
    description: 'The file TOOLGATE_TOOLS_FILE names (JSON or YAML): tool definitions and MCP servers. Generated from the schemas toolgate validates with.',
    ...plain,
    properties: { ...plain.properties, tools: { ...tools, items: { $ref: '#/$defs/ToolDefinition' } } },
    $defs: { ToolDefinition: toolDefinition }
  }
  return JSON.stringify(schema, null, 2) + '\n'
}
