/**
 * A toolgate client typed from openapi.yaml alone: `api.ts` is generated
 * from the spec (generate.ts), and this file is the only code. Every
 * operation is called by its operationId; its path parameters, query and
 * body are checked by the compiler, and the answer is typed by the status
 * it came with. A problem (4xx, 5xx) is thrown as a ToolgateError that
 * carries its stable `code`.
 *
 *   const tg = new ToolgateClient('http://127.0.0.1:8080', { apiKey })
 *   const run = await tg.call('createRun', { body: { toolExecution: 'safeParallel' } })
 *   const batch = await tg.call('runBatch', { params: { runId: run.data.runId }, body: { calls } })
 */
import { OPERATIONS, type Operations } from './api.js'

export type OperationId = keyof Operations
type Responses<K extends OperationId> = Operations[K]['responses']
type SuccessStatus = '200' | '201' | '202' | '204'
type Successful<K extends OperationId> = SuccessStatus & keyof Responses<K>

/** A successful answer: its status and its body, typed together. */
export type Answer<K extends OperationId> = { [S in Successful<K>]: { status: S extends `${infer N extends number}` ? N : never, data: Responses<K>[S] } }[Successful<K>]

/** What an operation takes; an operation that needs nothing may be called without it. */
type Args<K extends OperationId> = Record<string, never> extends Operations[K]['input'] ? [input?: Operations[K]['input']] : [input: Operations[K]['input']]

/** A problem toolgate answered (RFC 9457 with a stable `code`). */
export class ToolgateError extends Error {
  readonly status: number
  readonly code: string
  readonly problem: Record<string, unknown> | null

  constructor (status: number, problem: Record<string, unknown> | null) {
    super(typeof problem?.detail === 'string' ? problem.detail : typeof problem?.title === 'string' ? problem.title : `HTTP ${status}`)
    this.name = 'ToolgateError'
    this.status = status
    this.code = typeof problem?.code === 'string' ? problem.code : 'http_error'
    this.problem = problem
  }
}

export interface ClientOptions {
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string
  /** Another fetch (a test's, a proxy's); default the global one. */
  fetch?: typeof fetch
}

export class ToolgateClient {
  readonly #base: string
  readonly #headers: Record<string, string>
  readonly #fetch: typeof fetch

  constructor (baseUrl: string, options: ClientOptions = {}) {
    this.#base = baseUrl.replace(/\/$/, '')
    this.#headers = { accept: 'application/json', ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }) }
    this.#fetch = options.fetch ?? fetch
  }

  /** Calls one operation; resolves with its successful answer or throws a ToolgateError. */
  async call<K extends OperationId> (operationId: K, ...[input]: Args<K>): Promise<Answer<K>> {
    const { method, path } = OPERATIONS[operationId]
    const given = (input ?? {}) as { params?: Record<string, string>, query?: Record<string, unknown>, body?: unknown }
    const url = new URL(this.#base + path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(String(given.params?.[name] ?? ''))))
    for (const [name, value] of Object.entries(given.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value))
    }
    const hasBody = given.body !== undefined
    const res = await this.#fetch(url, {
      method,
      headers: hasBody ? { ...this.#headers, 'content-type': 'application/json' } : this.#headers,
      ...(hasBody ? { body: JSON.stringify(given.body) } : {})
    })
    const text = await res.text()
    const data: unknown = text === '' ? null : JSON.parse(text)
    if (!res.ok) throw new ToolgateError(res.status, data as Record<string, unknown> | null)
    return { status: res.status, data } as Answer<K>
  }
}
