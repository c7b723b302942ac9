import { randomUUID } from 'node:crypto'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'

/**
 * An MCP server over Streamable HTTP written by hand (JSON-RPC answered as
 * JSON, notifications on the GET stream), so that a test can make it say
 * what no SDK server would: tools whose schemas are not objects, names of
 * any length, 20,000 tools, answers of 100 MB, sessions it forgets, and
 * definitions that change under a running client.
 */
export interface ScriptedServer {
  url: string
  /** The tools tools/list answers, as sent (a test may change them at any time). */
  tools: unknown[]
  /** How each tools/call is answered: a result, or `stream` to send `bytes` of text result. */
  answer: (name: string, args: unknown) => { result: unknown } | { stream: number } | { error: { code: number, message: string } }
  /** Whether tools/list is answered as an SSE stream (one `message` event, then the stream ends) instead of JSON. */
  listAsSse: boolean
  /** tools/list requests received. */
  readonly lists: number
  /** tools/call requests received, by tool name. */
  readonly calls: string[]
  /** initialize requests received. */
  readonly sessions: number
  /** Forgets every session: the next request on one is answered 404. */
  forgetSessions (): void
  /** Sends notifications/tools/list_changed on every open GET stream; answers how many streams got it. */
  listChanged (): number
  /** Resolves once a client holds a GET stream open. */
  streamOpen (): Promise<void>
  close (): Promise<void>
}

export async function startScriptedServer (tools: unknown[] = []): Promise<ScriptedServer> {
  let lists = 0
  let sessions = 0
  const calls: string[] = []
  const known = new Set<string>()
  const streams = new Set<ServerResponse>()
  const streamWaiters: Array<() => void> = []

  const state: ScriptedServer = {
    url: '',
    tools,
    answer: (name) => ({ result: { content: [{ type: 'text', text: name }] } }),
    listAsSse: false,
    get lists () { return lists },
    get calls () { return calls },
    get sessions () { return sessions },
    forgetSessions () {
      known.clear()
      for (const s of streams) s.end()
      streams.clear()
    },
    listChanged () {
      for (const s of streams) s.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`)
      return streams.size
    },
    streamOpen () {
      if (streams.size > 0) return Promise.resolve()
      return new Promise((resolve) => { streamWaiters.push(resolve) })
    },
    close: async () => {}
  }

  const json = (res: ServerResponse, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sid = req.headers['mcp-session-id']
    if (req.method === 'GET') {
      if (typeof sid !== 'string' || !known.has(sid)) { res.writeHead(404).end(); return }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      res.flushHeaders()
      streams.add(res)
      res.on('close', () => streams.delete(res))
      for (const w of streamWaiters.splice(0)) w()
      return
    }
    if (req.method === 'DELETE') { res.writeHead(200).end(); return }
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const msg = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { method?: string, id?: unknown, params?: { name?: string, arguments?: unknown, cursor?: string } }
    if (msg.method === 'initialize') {
      sessions++
      const id = randomUUID()
      known.add(id)
      json(res, { jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'scripted', version: '1.0.0' } } }, { 'mcp-session-id': id })
      return
    }
    if (typeof sid !== 'string' || !known.has(sid)) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, error: { code: -32001, message: 'Session not found' } }))
      return
    }
    if (msg.id === undefined) { res.writeHead(202).end(); return }
    if (msg.method === 'tools/list') {
      lists++
      // The list is written as prepared text, so that this in-process server's own work is not counted as the client's.
      const tools = listText(state.tools)
      const answer = `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"tools":${tools}}}`
      if (state.listAsSse) res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`event: message\ndata: ${answer}\n\n`)
      else res.writeHead(200, { 'content-type': 'application/json' }).end(answer)
      return
    }
    if (msg.method === 'tools/call') {
      const name = msg.params?.name ?? ''
      calls.push(name)
      const answer = state.answer(name, msg.params?.arguments)
      if ('stream' in answer) {
        await streamText(res, msg.id, answer.stream)
        return
      }
      json(res, 'error' in answer ? { jsonrpc: '2.0', id: msg.id, error: answer.error } : { jsonrpc: '2.0', id: msg.id, result: answer.result })
      return
    }
    json(res, { jsonrpc: '2.0', id: msg.id, result: {} })
  }

  const http: Server = createServer((req, res) => {
    handle(req, res).catch(() => { if (!res.headersSent) res.writeHead(500).end() })
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`
  state.close = async () => {
    for (const s of streams) s.destroy()
    const closed = new Promise<void>((resolve) => http.close(() => resolve()))
    http.closeAllConnections()
    await closed
  }
  return state
}

const listTexts = new WeakMap<unknown[], { length: number, text: string }>()

/** The tools as JSON, kept while the array is not changed in length (tests that edit an entry in place make a new array). */
export function listText (tools: unknown[]): string {
  const kept = listTexts.get(tools)
  if (kept !== undefined && kept.length === tools.length) return kept.text
  const text = JSON.stringify(tools)
  listTexts.set(tools, { length: tools.length, text })
  return text
}

/** A tools/call result whose one text item is `bytes` long, written a megabyte at a time while the client reads. */
async function streamText (res: ServerResponse, id: unknown, bytes: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/json' })
  const open = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`
  const close = '"}]}}'
  const chunk = 'x'.repeat(1024 * 1024)
  if (!res.write(open)) await drained(res)
  for (let sent = 0; sent < bytes && !res.destroyed; sent += chunk.length) {
    if (!res.write(chunk)) await drained(res)
  }
  if (!res.destroyed) res.end(close)
}

function drained (res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => { res.off('drain', done); res.off('close', done); resolve() }
    res.on('drain', done)
    res.on('close', done)
  })
}

/** A tool definition as a server lists it. */
export function listedTool (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, description: `Tool ${name}.`, inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, ...extra }
}
