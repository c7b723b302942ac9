import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, CreateMessageResultSchema, ElicitResultSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { type SdkHttpServer, startSdkHttpServer } from '../mcp/sdk-http-server.js'

/**
 * An MCP server (the SDK's, over Streamable HTTP on 127.0.0.1) with the test
 * tools the official conformance suite's server scenarios call, as the
 * suite describes them. toolgate imports it with an empty prefix, so the
 * suite, talking to toolgate's own `/mcp`, finds the tools under their names.
 */
export type ConformanceUpstream = SdkHttpServer

/** A 1x1 red PNG and a minimal WAV (44-byte header, no samples). */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA='
const NO_ARGS = { type: 'object' as const, properties: {} }
const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

const TOOLS = [
  { name: 'test_simple_text', description: 'Answers one text item.', inputSchema: NO_ARGS },
  { name: 'test_image_content', description: 'Answers one image item.', inputSchema: NO_ARGS },
  { name: 'test_audio_content', description: 'Answers one audio item.', inputSchema: NO_ARGS },
  { name: 'test_embedded_resource', description: 'Answers one embedded resource.', inputSchema: NO_ARGS },
  { name: 'test_multiple_content_types', description: 'Answers text, an image and a resource.', inputSchema: NO_ARGS },
  { name: 'test_tool_with_logging', description: 'Logs three messages while it runs.', inputSchema: NO_ARGS },
  { name: 'test_error_handling', description: 'Always fails.', inputSchema: NO_ARGS },
  { name: 'test_tool_with_progress', description: 'Reports progress while it runs.', inputSchema: NO_ARGS },
  { name: 'test_sampling', description: 'Asks the client for a completion.', inputSchema: { type: 'object' as const, properties: { prompt: { type: 'string' } }, required: ['prompt'] } },
  { name: 'test_elicitation', description: "Asks the client's user for input.", inputSchema: { type: 'object' as const, properties: { message: { type: 'string' } }, required: ['message'] } },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object' as const,
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false
    }
  }
]

function build (): Server {
  const server = new Server({ name: 'conformance-upstream', version: '1.0.0' }, { capabilities: { tools: {}, logging: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS.map((t) => ({ ...t, annotations: { readOnlyHint: true } })) }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>
    const text = (t: string): { content: Array<{ type: 'text', text: string }> } => ({ content: [{ type: 'text', text: t }] })
    switch (request.params.name) {
      case 'test_simple_text': return text('This is a simple text response for testing.')
      case 'test_image_content': return { content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }
      case 'test_audio_content': return { content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }
      case 'test_embedded_resource':
        return { content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] }
      case 'test_multiple_content_types':
        return {
          content: [
            { type: 'text', text: 'Multiple content types test:' },
            { type: 'image', data: PNG, mimeType: 'image/png' },
            { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } }
          ]
        }
      case 'test_tool_with_logging':
        for (const [i, data] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
          if (i > 0) await delay(50)
          await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data } })
        }
        return text('Tool with logging executed successfully')
      case 'test_error_handling':
        return { isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] }
      case 'test_tool_with_progress': {
        const progressToken = request.params._meta?.progressToken
        for (const [i, progress] of [0, 50, 100].entries()) {
          if (i > 0) await delay(50)
          if (progressToken !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total: 100 } })
        }
        return text('Tool with progress executed successfully')
      }
      case 'test_sampling': {
        if (server.getClientCapabilities()?.sampling === undefined) return { isError: true, content: [{ type: 'text', text: 'The client does not support sampling.' }] }
        const answer = await extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: String(args.prompt) } }], maxTokens: 100 } }, CreateMessageResultSchema)
        const content = answer.content as { type: string, text?: string }
        return text(`LLM response: ${content.type === 'text' ? content.text ?? '' : JSON.stringify(content)}`)
      }
      case 'test_elicitation': {
        if (server.getClientCapabilities()?.elicitation === undefined) return { isError: true, content: [{ type: 'text', text: 'The client does not support elicitation.' }] }
        const answer = await extra.sendRequest({
          method: 'elicitation/create',
          params: {
            message: String(args.message),
            requestedSchema: { type: 'object', properties: { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } }, required: ['username', 'email'] }
          }
        }, ElicitResultSchema)
        return text(`User response: ${JSON.stringify({ action: answer.action, content: answer.content })}`)
      }
      case 'json_schema_2020_12_tool': return text(`Received: ${JSON.stringify(args)}`)
      default: return { isError: true, content: [{ type: 'text', text: `No tool ${request.params.name}.` }] }
    }
  })
  return server
}

export function startConformanceUpstream (port = 0): Promise<ConformanceUpstream> {
  return startSdkHttpServer(build, port)
}
