// The page's only way out: toolgate's own API, with the key from this tab's session storage.
const KEY = 'toolgate.apiKey'
// The API is served beside /ui/, so relative URLs work behind a path prefix too.
const BASE = new URL('../', document.baseURI)

export class ApiError extends Error {
  constructor (status, problem) {
    super(problem?.detail ?? problem?.title ?? `HTTP ${status}`)
    this.status = status
    this.code = problem?.code ?? 'http_error'
  }
}

export const session = {
  get key () { return sessionStorage.getItem(KEY) },
  set key (value) {
    if (value === null) sessionStorage.removeItem(KEY)
    else sessionStorage.setItem(KEY, value)
  }
}

/** Calls the API; answers the parsed body and the HTTP status, or throws an ApiError with the problem's code. */
export async function api (path, { method = 'GET', body } = {}) {
  const headers = { accept: 'application/json' }
  if (session.key !== null) headers.authorization = `Bearer ${session.key}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(new URL(path.replace(/^\//, ''), BASE), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
    redirect: 'error'
  })
  const text = await res.text()
  const data = text === '' ? null : JSON.parse(text)
  if (!res.ok) throw new ApiError(res.status, data)
  return { status: res.status, data }
}

export const enc = encodeURIComponent
