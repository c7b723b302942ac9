import type { FastifyInstance } from 'fastify'
import sjson from 'secure-json-parse'
import { ProblemError } from '../errors.js'

export const MAX_JSON_DEPTH = 64

/** Depth of a parsed JSON value, walked without recursion; stops once past `limit`. */
export function jsonDepthExceeds (value: unknown, limit: number): boolean {
  return bodyProblem(value, limit) === 'depth'
}

/**
 * The first thing wrong with a parsed body, walked without recursion: nesting
 * past `limit`, or a number too large for a double (JSON.parse reads 1e400 as
 * Infinity, which nothing downstream can hold or write back).
 */
export function bodyProblem (value: unknown, limit: number): 'depth' | 'number' | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : 'number'
  const stack: Array<[unknown, number]> = [[value, 1]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (typeof v !== 'object' || v === null) continue
    if (depth > limit) return 'depth'
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1])
      else if (typeof child === 'number' && !Number.isFinite(child)) return 'number'
    }
  }
  return null
}

/**
 * Request bodies: JSON only, prototype-poisoning keys refused, nesting deeper
 * than 64 and numbers past a double's range refused, all as 400 problems
 * before any handler runs.
 */
export function registerJsonBody (app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  const parse = (_req: unknown, body: string | Buffer, done: (err: Error | null, value?: unknown) => void): void => {
    const text = body as string
    if (text.trim() === '') {
      done(new ProblemError('invalid_request', 'The request body is empty; send a JSON object.'))
      return
    }
    let value: unknown
    try {
      value = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
    } catch (err) {
      const proto = /prototype|constructor/i.test((err as Error).message)
      done(new ProblemError('invalid_request', proto ? 'The body holds a forbidden key (__proto__ or constructor.prototype).' : 'The body is not valid JSON.'))
      return
    }
    const problem = bodyProblem(value, MAX_JSON_DEPTH)
    if (problem !== null) {
      done(new ProblemError('invalid_request', problem === 'depth'
        ? `The body nests deeper than ${MAX_JSON_DEPTH} levels.`
        : 'The body holds a number too large to represent.'))
      return
    }
    done(null, value)
  }
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse)
  app.addContentTypeParser(/^application\/[a-z0-9.+-]*\+json$/, { parseAs: 'string' }, parse)
  // Anything else is refused, not parsed.
  app.addContentTypeParser('*', (_req, _payload, done) => {
    done(new ProblemError('unsupported_media_type', 'Send the body as application/json.'))
  })
}
