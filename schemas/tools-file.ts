import { Type } from '@sinclair/typebox'
import { McpServerDefinition } from './mcp-server.js'
import { ToolDefinition } from './tool.js'

/**
 * The tools file (TOOLGATE_TOOLS_FILE) as a whole: its tools, its MCP
 * servers, and the `$schema` an editor reads (the loader ignores it).
 * `npm run tools-schema` writes it as schemas/tools-file.schema.json.
 */
export const ToolsFile = Type.Object({
  $schema: Type.Optional(Type.String({ description: 'Where an editor finds this schema; toolgate ignores it.' })),
  tools: Type.Array(ToolDefinition, { description: 'Tool definitions (docs/tools.md).' }),
  mcpServers: Type.Optional(Type.Array(McpServerDefinition, { description: 'MCP servers whose tools are imported (docs/tools.md).' }))
}, { additionalProperties: false })
