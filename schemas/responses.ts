import { Type, type TSchema } from '@sinclair/typebox'
import { ERRORS, type ErrorCode, problemBody } from '../src/errors.js'

/**
 * How routes declare what they answer, so the OpenAPI document tells a
 * generated client the truth: every success with a real description (and an
 * example where one helps), every error as `application/problem+json` with
 * the catalogue codes it can carry. src/http/openapi.ts adds the errors every
 * route shares (keys, rate limit, bodies, overload, bugs) from the route's
 * options, so a route lists only its own.
 */

export const PROBLEM_MEDIA_TYPE = 'application/problem+json'

/** A problem response as a route schema declares it (fastify's `content` form). */
export interface ProblemResponse {
  description: string
  content: { [PROBLEM_MEDIA_TYPE]: { schema: TSchema, example: unknown } }
}

/** The codes each problem response stands for; the OpenAPI transform merges the shared ones in. */
const codesOf = new WeakMap<object, readonly ErrorCode[]>()

const ProblemRef = Type.Ref('Problem')

/**
 * What fastify's HTTP layer answers, on any route, to a request it cannot
 * read: 400 (malformed), 408 (not received within TOOLGATE_REQUEST_TIMEOUT_MS)
 * or 431 (headers too large). Plain JSON, not a problem: no route runs.
 */
export const ClientError = Type.Object({
  error: Type.String(),
  message: Type.String(),
  statusCode: Type.Integer()
}, { $id: 'ClientError', description: 'A request the HTTP layer could not read; no route ran.' })

export const CLIENT_ERROR_RESPONSE = {
  description: 'The HTTP layer could not read the request (400 malformed, 408 not received in time, 431 headers too large); no route ran and nothing changed.',
  content: { 'application/json': { schema: Type.Ref('ClientError') } }
}

/** A success answer: its schema, what it means to the caller, and an example when one helps. */
export function answer<T extends TSchema> (schema: T, description: string, example?: unknown): T {
  return { ...schema, description, ...(example === undefined ? {} : { examples: [example] }) }
}

/** One problem response standing for `codes` (all of one status). */
export function problemResponse (codes: readonly ErrorCode[]): ProblemResponse {
  const ordered = (Object.keys(ERRORS) as ErrorCode[]).filter((c) => codes.includes(c))
  const first = ordered[0]!
  const response: ProblemResponse = {
    description: ordered.map((c) => `\`${c}\`: ${ERRORS[c].title}.`).join(' '),
    content: { [PROBLEM_MEDIA_TYPE]: { schema: ProblemRef, example: problemBody(first) } }
  }
  codesOf.set(response, ordered)
  return response
}

/** The catalogue codes a problem response made by `problems` stands for; undefined for any other response. */
export function problemCodes (response: unknown): readonly ErrorCode[] | undefined {
  return typeof response === 'object' && response !== null ? codesOf.get(response) : undefined
}

/**
 * The problem responses of a route, keyed by status: give the catalogue
 * codes it can answer (`problems('run_not_found', 'run_busy')`). A bare
 * status stands for every code of that status; prefer codes.
 */
export function problems (...items: Array<number | ErrorCode>): Record<number, ProblemResponse> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const item of items) {
    const codes = typeof item === 'number'
      ? (Object.keys(ERRORS) as ErrorCode[]).filter((c) => ERRORS[c].status === item)
      : [item]
    if (codes.length === 0) throw new Error(`No error of the catalogue has status ${item}`)
    for (const code of codes) {
      const status = ERRORS[code].status
      const list = byStatus.get(status) ?? []
      if (!list.includes(code)) list.push(code)
      byStatus.set(status, list)
    }
  }
  const out: Record<number, ProblemResponse> = {}
  for (const [status, codes] of byStatus) out[status] = problemResponse(codes)
  return out
}

/** A string enum that serializes as a plain string (a union of literals would make the serializer test each branch). */
export function stringEnum<T extends string> (values: readonly T[], description?: string): TSchema & { static: T } {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description === undefined ? {} : { description }) }) as TSchema & { static: T }
}
