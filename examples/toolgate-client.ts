/**
 * The few toolgate calls an orchestrator loop makes, over fetch: create a
 * run, list its tools in a provider's shape, send one model turn and, when
 * the turn waits for a person's approval (202), wait for the decision. The
 * provider examples beside this file use it.
 */
export interface BatchAnswer {
  results: Array<{ callId: string, name: string, status: string, content: string, isError: boolean }>
  /** What to append to the conversation, in the format the turn was sent in. */
  messages: any[]
  continue: boolean
  run: { state: string, terminationReason?: string }
}

/** A turn held for approval: what the 202 answer says while it waits. */
export interface Waiting {
  runId: string
  batchId: string
  state: 'awaiting_approval' | 'running'
  approvals?: Array<{ callId: string, tool: string, arguments: unknown, expiresAt: string }>
}

export interface ToolgateOptions {
  /** Sent as `Authorization: Bearer <apiKey>` when toolgate has keys configured. */
  apiKey?: string
  /** How often a held turn is asked again, in ms (default 1000). */
  pollMs?: number
  /** Told (and awaited) once when a turn starts waiting for a person (default: a line on stderr). */
  onWaiting?: (waiting: Waiting) => void | Promise<void>
}

export class Toolgate {
  readonly #url: string
  readonly #headers: Record<string, string>
  readonly #pollMs: number
  readonly #onWaiting: (waiting: Waiting) => void | Promise<void>

  /** `url` like http://127.0.0.1:8080; an API key (string) or options. */
  constructor (url: string, options: string | ToolgateOptions = {}) {
    const { apiKey, pollMs = 1000, onWaiting = tellWaiting } = typeof options === 'string' ? { apiKey: options } : options
    this.#pollMs = pollMs
    this.#onWaiting = onWaiting
    this.#url = url.replace(/\/$/, '')
    this.#headers = { 'content-type': 'application/json', ...(apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }) }
  }

  async createRun (options: Record<string, unknown> = {}): Promise<{ runId: string }> {
    return await this.#send('POST', '/v1/runs', options)
  }

  /** The run's tools as `format` takes them in its request's `tools`. */
  async tools (runId: string, format: 'openaiChat' | 'openaiResponses' | 'anthropic' | 'gemini'): Promise<any[]> {
    return (await this.#send('GET', `/v1/runs/${encodeURIComponent(runId)}/tools?format=${format}`)).tools
  }

  /**
   * One model turn: `{ openaiChat: completion }`, `{ anthropic: message }`, ... as the SDK returned it.
   * A turn that holds a call needing approval answers 202 and runs nothing until a person decided
   * (the operator page at /ui, or `POST .../approvals`): this waits for that, asking where the
   * batch stands every `pollMs`, and returns the completed answer, `messages` and all.
   */
  async batch (runId: string, body: Record<string, unknown>): Promise<BatchAnswer> {
    let answer = await this.#send('POST', `/v1/runs/${encodeURIComponent(runId)}/batches`, body)
    if (answer.state === 'awaiting_approval') await this.#onWaiting(answer as Waiting)
    while (answer.state === 'awaiting_approval' || answer.state === 'running') {
      await new Promise((resolve) => setTimeout(resolve, this.#pollMs))
      answer = await this.#send('GET', `/v1/runs/${encodeURIComponent(runId)}/batches/${encodeURIComponent(answer.batchId as string)}`)
    }
    return answer
  }

  async #send (method: string, path: string, body?: unknown): Promise<any> {
    const headers = body === undefined ? { ...this.#headers, 'content-type': undefined } : this.#headers
    const res = await fetch(this.#url + path, { method, headers: dropUndefined(headers), ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const answer: any = await res.json()
    if (!res.ok) throw new Error(`toolgate answered ${res.status}: ${answer.detail ?? answer.title}`)
    return answer
  }
}

function dropUndefined (headers: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => e[1] !== undefined))
}

function tellWaiting (waiting: Waiting): void {
  const calls = (waiting.approvals ?? []).map((a) => `${a.callId} (${a.tool})`).join(', ')
  process.stderr.write(`turn ${waiting.batchId} of run ${waiting.runId} waits for a person to approve ${calls}: open /ui, or POST /v1/runs/${waiting.runId}/batches/${waiting.batchId}/approvals\n`)
}
