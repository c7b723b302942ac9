/**
 * The scripted server in a process of its own, listing `huge` (whose
 * answer is 100 MB of text), `small`, and `argv[2]` more tools: a hostile
 * server's own work (building a list of 20,000 tools, writing 100 MB) is
 * then not counted in the test process's event loop. Prints its URL.
 * With `sse` as `argv[3]`, tools/list is answered as an SSE stream.
 */
import { listText, listedTool, startScriptedServer } from './scripted-server.js'

const count = Number(process.argv[2] ?? '0')
const tools = Array.from({ length: count }, (_, i) => listedTool(`t${i}`, { inputSchema: { type: 'object', properties: { a: { type: 'string', maxLength: 10 + (i % 7) }, b: { type: 'integer' } }, required: ['a'] } }))
const read = { annotations: { readOnlyHint: true } }
tools.unshift(listedTool('huge', read), listedTool('small', read))
listText(tools)
const server = await startScriptedServer(tools)
server.listAsSse = process.argv[3] === 'sse'
server.answer = (name) => name === 'huge' ? { stream: 100 * 1024 * 1024 } : { result: { content: [{ type: 'text', text: 'fine' }] } }
process.stdout.write(`${server.url}\n`)
process.on('SIGTERM', () => { void server.close().then(() => process.exit(0)) })
