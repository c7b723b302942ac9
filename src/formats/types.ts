import type { TSchema } from '@sinclair/typebox'
import type { CallResult, PolicyMessage } from '../model/result.js'
import type { RawCall } from '../model/call.js'

/** Token counts a provider reported for the turn. */
export interface DecodedUsage { inputTokens: number, outputTokens: number }

/** What a provider object says of one model turn, in toolgate's own terms. */
export interface Decoded {
  /** The tool calls in source order: ids, names and arguments as the provider sent them. */
  calls: RawCall[]
  usage?: DecodedUsage
  /** The provider marked the response as cut short or filtered: nothing of it may run. */
  incomplete: boolean
}

/** A tool as a run offers it (SPEC section 3), before it is put in a provider's shape. */
export interface OfferedTool { name: string, description: string, inputSchema: Record<string, unknown> }

/**
 * One provider's wire format: the batch body field of that name is decoded
 * with `decode`, the answer's `messages` are made by `render`, and
 * `GET /v1/runs/{runId}/tools?format=` by `toolList`. A new format is one
 * module of this shape added to the list in `index.ts`.
 */
export interface ProviderFormat {
  /** The batch body field and the `format` query value. */
  readonly name: string
  /** The fields toolgate reads, for the route schema and openapi.yaml; other fields are allowed. */
  readonly schema: TSchema
  /** `path` is the JSON pointer of `body` in the request, for the 400 a wrong shape gets. */
  decode: (body: unknown, path: string) => Decoded
  /**
   * What to append to the conversation: one item per result, in order, then
   * the policy messages. `calls` are the batch's calls as decoded, by
   * position (what the format marked on them: `kind`, `generatedId`).
   */
  render: (results: readonly CallResult[], policyMessages: readonly PolicyMessage[], calls: readonly RawCall[]) => unknown[]
  /** The tools as that provider's request takes them in `tools`. */
  toolList: (tools: readonly OfferedTool[]) => Array<Record<string, unknown>>
}
