import type { Replica } from '../replicas/processes.js'

/** An answer of the service: its status, and its JSON body when it has one. */
export interface Answer { status: number, body: any }

/** One request to `svc` with `key` as its bearer token; the answer's status is recorded in `statuses` (for the closing count of 5xx). */
export async function callAs (svc: Replica, key: string, statuses: number[], method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(svc.url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  statuses.push(res.status)
  const text = await res.text()
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
}
