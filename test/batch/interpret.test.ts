/**
 * The interpretation of executor answers as tables (SPEC sections 5, 7 and
 * 12): each row is an exchange's answer, as toolgate's HTTP client or the
 * MCP classification gives it for one condition, and what it means for a
 * plain read, a plain write and an action tool. Pure, so no servers; the
 * black-box side (real executors on port 0 producing each condition) is
 * test/dispatch/executor-answers.test.ts and test/mcp/outcomes.test.ts.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import t from 'tap'
import { type ActionAnswer, type PlainOutcome, actionCallStatus, interpretActionAnswer, interpretAnswer } from '../../src/batch/interpret.js'
import type { ExecutorAnswer } from '../../src/dispatch/executor.js'
import { classifyCallError } from '../../src/mcp/classify.js'

type Status = PlainOutcome['status']

/** What a plain call's outcome must be: `content` exactly, or the `error` code of toolgate's JSON error content. */
interface Plain {
  status: Status
  content?: string
  error?: string
  details: PlainOutcome['details']
}

interface Row {
  name: string
  answer: ExecutorAnswer
  read: Plain
  write: Plain
  action: Omit<ActionAnswer, 'end'> & { end: string, call: Status }
}

const UNCERTAIN: Omit<Plain, 'details'> = { status: 'uncertain', error: 'outcome_unknown' }
const FAILED_READ: Omit<Plain, 'details'> = { status: 'error', error: 'executor_failed' }
const same = (p: Plain): Pick<Row, 'read' | 'write'> => ({ read: p, write: p })
/** A condition whose outcome is unknown: a read is a plain error, a write is uncertain; an action's receipt is uncertain. */
const unknown = (cause: string, httpStatus?: number, end = 'failed'): Pick<Row, 'read' | 'write' | 'action'> => {
  const details = httpStatus === undefined ? { cause } : { cause, httpStatus }
  return {
    read: { ...FAILED_READ, details },
    write: { ...UNCERTAIN, details },
    action: { status: 'uncertain', result: { error: 'outcome_unknown', cause }, stateRevision: null, end, call: 'uncertain' }
  }
}
const answered = (status: number, body: unknown): ExecutorAnswer => ({ kind: 'answered', status, body, bodyText: body === undefined ? '' : JSON.stringify(body) })

const HTTP_ROWS: Row[] = [
  {
    name: 'HTTP 2xx with string content: ok, the string passed through',
    answer: answered(200, { content: 'the tile is grass' }),
    ...same({ status: 'ok', content: 'the tile is grass', details: { httpStatus: 200 } }),
    action: { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'unreadable_answer' }, stateRevision: null, end: 'responded', call: 'uncertain' }
  },
  {
    name: 'HTTP 2xx with object content and details: ok, the content serialized, the details kept for the host',
    answer: answered(201, { content: { tile: 'grass' }, details: { cost: 3 } }),
    ...same({ status: 'ok', content: '{"tile":"grass"}', details: { httpStatus: 201, executor: { cost: 3 } } }),
    action: { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'unreadable_answer' }, stateRevision: null, end: 'responded', call: 'uncertain' }
  },
  {
    name: 'HTTP 2xx saying isError: a definitive error with the executor\'s content',
    answer: answered(200, { content: 'no such tile', isError: true }),
    ...same({ status: 'error', content: 'no such tile', details: { httpStatus: 200 } }),
    action: { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'unreadable_answer' }, stateRevision: null, end: 'responded', call: 'uncertain' }
  },
  {
    name: 'HTTP 204 with no body: ok with nothing to say (an action needs its status, so its outcome is unknown)',
    answer: { kind: 'answered', status: 204, body: undefined, bodyText: '' },
    ...same({ status: 'ok', content: '', details: { httpStatus: 204 } }),
    action: { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'unreadable_answer' }, stateRevision: null, end: 'responded', call: 'uncertain' }
  },
  {
    name: 'HTTP 2xx that is not JSON: unreadable, so unknown for a write',
    answer: { kind: 'answered', status: 200, body: undefined, bodyText: '<html>' },
    ...unknown('unreadable_answer', 200, 'responded')
  },
  {
    name: 'HTTP 2xx whose isError is not a boolean: unreadable',
    answer: answered(200, { content: 'x', isError: 'yes' }),
    ...unknown('unreadable_answer', 200, 'responded')
  },
  {
    name: 'HTTP 2xx whose details are not an object: unreadable',
    answer: answered(200, { content: 'x', details: [1] }),
    ...unknown('unreadable_answer', 200, 'responded')
  },
  {
    name: 'HTTP 2xx of an action: committed with its result and state revision',
    answer: answered(200, { status: 'committed', result: { label: 'Wall #12' }, stateRevision: 42 }),
    ...same({ status: 'ok', content: '', details: { httpStatus: 200 } }),
    action: { status: 'committed', result: { label: 'Wall #12' }, stateRevision: 42, end: 'responded', call: 'ok' }
  },
  {
    name: 'HTTP 2xx of an action that refused: rejected, an error for the model',
    answer: answered(200, { status: 'rejected', result: { why: 'occupied' }, stateRevision: 'r7' }),
    ...same({ status: 'ok', content: '', details: { httpStatus: 200 } }),
    action: { status: 'rejected', result: { why: 'occupied' }, stateRevision: 'r7', end: 'responded', call: 'error' }
  },
  {
    name: 'HTTP 2xx of an action committed without a result: an empty result',
    answer: answered(200, { status: 'committed' }),
    ...same({ status: 'ok', content: '', details: { httpStatus: 200 } }),
    action: { status: 'committed', result: {}, stateRevision: null, end: 'responded', call: 'ok' }
  },
  {
    name: 'HTTP 2xx of an action with a state revision that is neither string nor number: unreadable',
    answer: answered(200, { status: 'committed', result: {}, stateRevision: true }),
    ...same({ status: 'ok', content: '', details: { httpStatus: 200 } }),
    action: { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'unreadable_answer' }, stateRevision: null, end: 'responded', call: 'uncertain' }
  },
  {
    name: 'HTTP 2xx of an action with another status: unreadable',
    answer: answered(200, { status: 'done', result: {} }),
    ...same({ status: 'ok', content: '', details: { httpStatus: 200 } }),
    action: { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'unreadable_answer' }, stateRevision: null, end: 'responded', call: 'uncertain' }
  },
  {
    name: 'HTTP 3xx: a redirect is not followed, the call was not performed',
    answer: answered(302, undefined),
    ...same({ status: 'error', error: 'executor_redirect', details: { httpStatus: 302 } }),
    action: { status: 'failed', result: { error: 'executor_redirect', httpStatus: 302 }, stateRevision: null, end: 'responded', call: 'error' }
  },
  {
    name: 'HTTP 4xx with content: a definitive error with the executor\'s content',
    answer: answered(404, { content: { error: 'no_such_tile' }, details: { tile: 9 } }),
    ...same({ status: 'error', content: '{"error":"no_such_tile"}', details: { httpStatus: 404, executor: { tile: 9 } } }),
    action: { status: 'rejected', result: { error: 'executor_rejected', httpStatus: 404 }, stateRevision: null, end: 'responded', call: 'error' }
  },
  {
    name: 'HTTP 4xx without a body: a definitive error in toolgate\'s words; an action is rejected',
    answer: answered(422, undefined),
    ...same({ status: 'error', error: 'executor_rejected', details: { httpStatus: 422 } }),
    action: { status: 'rejected', result: { error: 'executor_rejected', httpStatus: 422 }, stateRevision: null, end: 'responded', call: 'error' }
  },
  {
    name: 'HTTP 4xx of an action with its own result and revision: rejected with them',
    answer: answered(409, { result: { conflict: true }, stateRevision: 'r9' }),
    ...same({ status: 'error', error: 'executor_rejected', details: { httpStatus: 409 } }),
    action: { status: 'rejected', result: { conflict: true }, stateRevision: 'r9', end: 'responded', call: 'error' }
  },
  {
    name: 'HTTP 5xx (the client answers unknown): unknown',
    answer: { kind: 'unknown', code: 'executor_5xx', status: 503 },
    ...unknown('executor_5xx', 503)
  },
  {
    name: 'a timeout after the request was sent: unknown, the receipt says it timed out',
    answer: { kind: 'unknown', code: 'timeout' },
    ...unknown('timeout', undefined, 'timed_out')
  },
  {
    name: 'a timeout after the status line came: unknown, with the status',
    answer: { kind: 'unknown', code: 'timeout', status: 200 },
    ...unknown('timeout', 200, 'timed_out')
  },
  {
    name: 'the connection closing before a whole response: unknown',
    answer: { kind: 'unknown', code: 'UND_ERR_SOCKET' },
    ...unknown('UND_ERR_SOCKET')
  },
  {
    name: 'an answer over the size cap: unknown',
    answer: { kind: 'unknown', code: 'response_too_large', status: 200 },
    ...unknown('response_too_large', 200)
  },
  {
    name: 'a connection refused (never sent): a definitive error, the action failed',
    answer: { kind: 'unsent', code: 'ECONNREFUSED' },
    ...same({ status: 'error', error: 'executor_unavailable', details: { reason: 'executor_unavailable', cause: 'ECONNREFUSED' } }),
    action: { status: 'failed', result: { error: 'executor_unavailable', cause: 'ECONNREFUSED' }, stateRevision: null, end: 'failed', call: 'error' }
  },
  {
    name: 'a timeout while waiting for a socket (never sent): a definitive error',
    answer: { kind: 'unsent', code: 'timeout' },
    ...same({ status: 'error', error: 'executor_unavailable', details: { reason: 'executor_unavailable', cause: 'timeout' } }),
    action: { status: 'failed', result: { error: 'executor_unavailable', cause: 'timeout' }, stateRevision: null, end: 'failed', call: 'error' }
  }
]

const LONG = 'x'.repeat(600)
const MCP_ROWS: Row[] = [
  {
    name: 'MCP result of text items: ok, the texts joined by newlines; an action commits with the content',
    answer: { kind: 'tool_result', result: { content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] } },
    ...same({ status: 'ok', content: 'one\ntwo', details: {} }),
    action: { status: 'committed', result: { content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] }, stateRevision: null, end: 'responded', call: 'ok' }
  },
  {
    name: 'MCP result with structuredContent: ok, it is serialized first; an action commits with it',
    answer: { kind: 'tool_result', result: { content: [{ type: 'text', text: 'ignored' }], structuredContent: { n: 1 } } },
    ...same({ status: 'ok', content: '{"n":1}', details: {} }),
    action: { status: 'committed', result: { n: 1 }, stateRevision: null, end: 'responded', call: 'ok' }
  },
  {
    name: 'MCP result with an item that is not text: the content array serialized',
    answer: { kind: 'tool_result', result: { content: [{ type: 'text', text: 'a' }, { type: 'image', data: 'AA==', mimeType: 'image/png' }] } },
    ...same({ status: 'ok', content: '[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}]', details: {} }),
    action: { status: 'committed', result: { content: [{ type: 'text', text: 'a' }, { type: 'image', data: 'AA==', mimeType: 'image/png' }] }, stateRevision: null, end: 'responded', call: 'ok' }
  },
  {
    name: 'MCP result with isError: a definitive error with its content; an action is rejected',
    answer: { kind: 'tool_result', result: { content: [{ type: 'text', text: 'denied' }], isError: true } },
    ...same({ status: 'error', content: 'denied', details: {} }),
    action: { status: 'rejected', result: { content: [{ type: 'text', text: 'denied' }] }, stateRevision: null, end: 'responded', call: 'error' }
  },
  {
    name: 'MCP JSON-RPC error: a definitive error naming the code; an action is rejected',
    answer: { kind: 'tool_refused', code: -32602, message: 'Invalid params' },
    ...same({ status: 'error', content: JSON.stringify({ error: 'executor_rejected', message: 'The tool refused the call (JSON-RPC error -32602): Invalid params' }), details: { cause: 'jsonrpc_error', jsonRpcCode: -32602 } }),
    action: {
      status: 'rejected',
      result: { error: 'executor_rejected', jsonRpcCode: -32602, message: 'The tool refused the call (JSON-RPC error -32602): Invalid params' },
      stateRevision: null,
      end: 'responded',
      call: 'error'
    }
  },
  {
    name: 'MCP JSON-RPC error with a long message: cut at 500 characters',
    answer: { kind: 'tool_refused', code: 1, message: LONG },
    ...same({ status: 'error', content: JSON.stringify({ error: 'executor_rejected', message: `The tool refused the call (JSON-RPC error 1): ${'x'.repeat(500)}…` }), details: { cause: 'jsonrpc_error', jsonRpcCode: 1 } }),
    action: {
      status: 'rejected',
      result: { error: 'executor_rejected', jsonRpcCode: 1, message: `The tool refused the call (JSON-RPC error 1): ${'x'.repeat(500)}…` },
      stateRevision: null,
      end: 'responded',
      call: 'error'
    }
  },
  { name: 'MCP timeout after sending: unknown', answer: { kind: 'unknown', code: 'timeout' }, ...unknown('timeout', undefined, 'timed_out') },
  { name: 'MCP transport closing before the answer: unknown', answer: { kind: 'unknown', code: 'connection_closed' }, ...unknown('connection_closed') },
  {
    name: 'MCP server not connected (never sent): a definitive error',
    answer: { kind: 'unsent', code: 'not_connected' },
    ...same({ status: 'error', error: 'executor_unavailable', details: { reason: 'executor_unavailable', cause: 'not_connected' } }),
    action: { status: 'failed', result: { error: 'executor_unavailable', cause: 'not_connected' }, stateRevision: null, end: 'failed', call: 'error' }
  }
]

for (const row of [...HTTP_ROWS, ...MCP_ROWS]) {
  t.test(row.name, async (t) => {
    for (const kind of ['read', 'write'] as const) {
      const want = row[kind]
      const got = interpretAnswer(structuredClone(row.answer), kind === 'read')
      t.equal(got.status, want.status, `a plain ${kind} is ${want.status}`)
      t.equal(got.isError, want.status !== 'ok', `a plain ${kind}'s isError`)
      t.strictSame(got.details, want.details, `a plain ${kind}'s details`)
      if (want.content !== undefined) t.equal(got.content, want.content, `a plain ${kind}'s content`)
      if (want.error !== undefined) {
        const content = JSON.parse(got.content) as { error: string, message: string }
        t.equal(content.error, want.error, `a plain ${kind}'s content names ${want.error}`)
        t.type(content.message, 'string')
      }
    }
    const { call, ...receipt } = row.action
    const got = interpretActionAnswer(structuredClone(row.answer))
    t.strictSame(got, receipt, 'an action\'s receipt')
    t.equal(actionCallStatus(got.status), call, `an action call is ${call}`)
  })
}

t.test('an action call is ok only when committed, and uncertain only when its receipt is', async (t) => {
  t.strictSame(['committed', 'rejected', 'failed', 'uncertain'].map((s) => actionCallStatus(s as ActionAnswer['status'])), ['ok', 'error', 'error', 'uncertain'])
})

/** An error the MCP SDK gives a failed `tools/call`, and the answer class it is. */
const MCP_ERRORS: Array<{ name: string, error: unknown, answer: ExecutorAnswer }> = [
  { name: 'the SDK\'s own timeout (it sent notifications/cancelled)', error: new McpError(ErrorCode.RequestTimeout, 'Request timed out', { timeout: 1000 }), answer: { kind: 'unknown', code: 'timeout' } },
  { name: 'a server\'s own timeout error is its answer', error: new McpError(ErrorCode.RequestTimeout, 'upstream slow'), answer: { kind: 'tool_refused', code: ErrorCode.RequestTimeout, message: 'upstream slow' } },
  { name: 'the transport closing under the request', error: new McpError(ErrorCode.ConnectionClosed, 'Connection closed'), answer: { kind: 'unknown', code: 'connection_closed' } },
  { name: 'a JSON-RPC error answer', error: new McpError(ErrorCode.InvalidParams, 'bad x'), answer: { kind: 'tool_refused', code: ErrorCode.InvalidParams, message: 'bad x' } },
  { name: 'a Streamable HTTP 5xx', error: new StreamableHTTPError(502, 'Bad Gateway'), answer: { kind: 'unknown', code: 'executor_5xx', status: 502 } },
  { name: 'a Streamable HTTP 4xx: the server refused the request as a whole', error: new StreamableHTTPError(401, 'Unauthorized'), answer: { kind: 'answered', status: 401, body: undefined, bodyText: '' } },
  { name: 'a Streamable HTTP error without a status', error: new StreamableHTTPError(undefined as unknown as number, 'odd'), answer: { kind: 'unknown', code: 'unreadable_answer' } },
  { name: 'a client not connected', error: new Error('Not connected'), answer: { kind: 'unsent', code: 'not_connected' } },
  { name: 'a connection refused, wrapped by fetch', error: Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }), answer: { kind: 'unsent', code: 'ECONNREFUSED' } },
  { name: 'an answer that is not a tool result', error: Object.assign(new Error('invalid'), { name: 'ZodError' }), answer: { kind: 'unknown', code: 'unreadable_answer' } },
  { name: 'a connection lost after sending', error: new Error('socket hang up'), answer: { kind: 'unknown', code: 'connection_lost' } },
  { name: 'something thrown that is not an Error', error: 'boom', answer: { kind: 'unknown', code: 'request_failed' } }
]

for (const row of MCP_ERRORS) {
  t.test(`an MCP call failing with ${row.name} answers ${row.answer.kind}`, async (t) => {
    t.strictSame(classifyCallError(row.error), row.answer)
  })
}

t.test('an MCP server\'s 4xx is a definitive error for a read and a write alike; its 5xx is uncertain only for a write', async (t) => {
  const refused = classifyCallError(new StreamableHTTPError(403, 'Forbidden'))
  t.equal(interpretAnswer(refused, true).status, 'error')
  t.equal(interpretAnswer(refused, false).status, 'error')
  const failed = classifyCallError(new StreamableHTTPError(500, 'oops'))
  t.equal(interpretAnswer(failed, true).status, 'error')
  t.equal(interpretAnswer(failed, false).status, 'uncertain')
})
