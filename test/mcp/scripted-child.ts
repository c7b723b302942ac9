/**
 * The scripted server in a process of its own, listing `huge` (whose
 * answer is 100 MB of text), `small`, and `argv[2]` more tools: a hostile
 * server's own work (building a list of 20,000 tools, writing 100 MB) is
 * then not counted in the test process's event loop. Prints its URL.
 * Flags after the count: `sse` answers tools/list as an SSE stream;
 * `costly` lists `costly` too, whose schema's `$ref`s branch 22 deep. On
 * SIGUSR2 it lists one more tool, `added`, first, and sends 200
 * list_changed notices at once.
 */
import { branchingRefs } from '../tools/costly-schemas.js'
import { listText, listedTool, startScriptedServer } from './scripted-server.js'

const count = Number(process.argv[2] ?? '0')
const flags = process.argv.slice(3)
const tools = Array.from({ length: count }, (_, i) => listedTool(`t${i}`, { inputSchema: { type: 'object', properties: { a: { type: 'string', maxLength: 10 + (i % 7) }, b: { type: 'integer' } }, required: ['a'] } }))
const read = { annotations: { readOnlyHint: true } }
tools.unshift(listedTool('huge', read), listedTool('small', read))
if (flags.includes('costly')) tools.unshift(listedTool('costly', { inputSchema: { type: 'object', ...branchingRefs(22) } }))
listText(tools)
const server = await startScriptedServer(tools)
server.listAsSse = flags.includes('sse')
server.answer = (name) => name === 'huge' ? { stream: 100 * 1024 * 1024 } : { result: { content: [{ type: 'text', text: 'fine' }] } }
process.stdout.write(`${server.url}\n`)
process.on('SIGTERM', () => { void server.close().then(() => process.exit(0)) })
process.on('SIGUSR2', () => {
  server.tools = [listedTool('added', read), ...server.tools]
  for (let i = 0; i < 200; i++) server.listChanged()
})
