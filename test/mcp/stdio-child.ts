/**
 * An MCP server over stdio written by hand (one JSON-RPC message a line),
 * listing `small` and `argv[2]` more tools as scripted-child.ts does: its
 * tools/list answer is prepared text, so that a list of 20,000 tools costs
 * the client its parse, not this process's JSON.stringify. `small` answers
 * "fine". With `flood` as `argv[3]`, tools/list is answered with a line of
 * 64 MiB, a megabyte at a time while the client reads.
 */
import { createInterface } from 'node:readline'
import { listText, listedTool } from './scripted-server.js'

const count = Number(process.argv[2] ?? '0')
const tools = Array.from({ length: count }, (_, i) => listedTool(`t${i}`, { inputSchema: { type: 'object', properties: { a: { type: 'string', maxLength: 10 + (i % 7) }, b: { type: 'integer' } }, required: ['a'] } }))
tools.unshift(listedTool('small', { annotations: { readOnlyHint: true } }))
const listed = listText(tools)

const flood = process.argv[3] === 'flood'
const send = (text: string): void => { process.stdout.write(text + '\n') }

async function sendFlood (id: string): Promise<void> {
  const chunk = 'x'.repeat(1024 * 1024)
  const write = (text: string): Promise<void> => new Promise((resolve) => { if (process.stdout.write(text)) resolve(); else process.stdout.once('drain', resolve) })
  await write(`{"jsonrpc":"2.0","id":${id},"result":{"tools":[{"name":"x","description":"`)
  for (let i = 0; i < 64 && process.stdout.writable; i++) await write(chunk)
  send('"}]}}')
}
process.stdout.on('error', () => process.exit(0))
createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line) as { id?: unknown, method?: string }
  if (msg.id === undefined) return
  const id = JSON.stringify(msg.id)
  if (msg.method === 'initialize') {
    send(`{"jsonrpc":"2.0","id":${id},"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"stdio-scripted","version":"1.0.0"}}}`)
  } else if (msg.method === 'tools/list' && flood) {
    void sendFlood(id)
  } else if (msg.method === 'tools/list') {
    send(`{"jsonrpc":"2.0","id":${id},"result":{"tools":${listed}}}`)
  } else if (msg.method === 'tools/call') {
    send(`{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"fine"}]}}`)
  } else {
    send(`{"jsonrpc":"2.0","id":${id},"result":{}}`)
  }
})
