import { Type } from '@sinclair/typebox'
import { ERRORS, type ErrorCode } from '../src/errors.js'
import { TERMINATION_REASONS } from './run-states.js'
import { stringEnum } from './responses.js'

export { problems } from './responses.js'

/** RFC 9457 problem, as every error is answered (`application/problem+json`). */
export const Problem = Type.Object({
  type: Type.String({ description: 'A URI naming the problem type; one per code.' }),
  title: Type.String({ description: 'A short summary that goes with the code.' }),
  status: Type.Integer({ description: 'The HTTP status.' }),
  code: stringEnum(Object.keys(ERRORS) as ErrorCode[], 'Stable error code from the catalogue: switch on this.'),
  detail: Type.Optional(Type.String({ description: 'What went wrong in this case.' })),
  instance: Type.Optional(Type.String({ description: 'The request path.' })),
  terminationReason: Type.Optional(stringEnum(TERMINATION_REASONS, 'With `run_not_active`: why the run stopped.')),
  problems: Type.Optional(Type.Array(Type.String(), { description: 'With `invalid_tool`: every fault found in the definition.' }))
}, { $id: 'Problem', additionalProperties: true, description: 'An RFC 9457 problem with a stable `code`.' })

export const ProblemRef = Type.Ref('Problem')

export const RunIdPattern = '^[A-Za-z0-9_.:-]{1,128}$'
export const ToolNamePattern = '^[A-Za-z0-9_.-]{1,64}$'

export const RunIdParams = Type.Object({ runId: Type.String({ pattern: RunIdPattern }) })
