/**
 * The few toolgate calls an orchestrator loop makes, over fetch: create a
 * run, list its tools in a provider's shape, send one model turn. The
 * provider examples beside this file use it.
 */
export interface BatchAnswer {
  results: Array<{ callId: string, name: string, status: string, content: string, isError: boolean }>
  /** What to append to the conversation, in the format the turn was sent in. */
  messages: any[]
  continue: boolean
  run: { state: string, terminationReason?: string }
}

export class Toolgate {
  readonly #url: string
  readonly #headers: Record<string, string>

  /** `url` like http://127.0.0.1:8080; `apiKey` when toolgate has keys configured. */
  constructor (url: string, apiKey?: string) {
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

  /** One model turn: `{ openaiChat: completion }`, `{ anthropic: message }`, ... as the SDK returned it. */
  async batch (runId: string, body: Record<string, unknown>): Promise<BatchAnswer> {
    return await this.#send('POST', `/v1/runs/${encodeURIComponent(runId)}/batches`, body)
  }

  async #send (method: string, path: string, body?: unknown): Promise<any> {
    const res = await fetch(this.#url + path, { method, headers: this.#headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const answer: any = await res.json()
    if (!res.ok) throw new Error(`toolgate answered ${res.status}: ${answer.detail ?? answer.title}`)
    return answer
  }
}
