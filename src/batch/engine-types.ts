/**
 * What the batch engine is given and answers, shared by the engine, the
 * coordinator and the phases so none of them imports another for its types.
 */
import type { Logger } from 'pino'
import type { ApprovalSettings } from '../approvals/types.js'
import type { Clock } from '../clock.js'
import type { Executor } from '../dispatch/executor.js'
import type { LineFields } from '../logger.js'
import type { Guard } from '../guards/types.js'
import type { ExternalAuthorizer } from '../prepare/authorize.js'
import type { RawCall } from '../model/call.js'
import type { RunStats } from '../model/run.js'
import type { Store } from '../store/types.js'
import type { Telemetry } from '../telemetry/types.js'
import type { ToolLookup } from '../model/tool.js'
import type { UncertainWrites } from '../uncertain/service.js'
import type { TenantKeyGate } from '../conflicts/gate.js'
import type { BatchEvent } from '../model/result.js'
import type { SharedLease } from '../runs/lease.js'
import type { IdentifiedCalls } from './identify-calls.js'
import type { Ready } from './state.js'

/** What the engine is built with, and hands every phase. */
export interface EngineDeps {
  store: Store
  tools: ToolLookup
  /** The executor of tools that name none of their own (toolgate's HTTP executor protocol). */
  http: Executor
  telemetry: Telemetry
  authorizer?: ExternalAuthorizer
  /** The wall clock of leases, deadlines, approvals' expiry and the times answers carry. */
  clock: Clock
  /** Where store failures no request answers for (a lease renewal, a release) are logged. */
  logger?: Pick<Logger, 'warn'>
  /** Identifies this process in a run's lease. */
  replicaId: string
  /** How long a batch lease lasts without renewal. */
  leaseMs: number
  /** Largest arguments of one call, as JSON. */
  maxArgumentBytes: number
  /** A batch's preparation taking longer than this is reported (`preparationSlow`). */
  slowPreparationMs?: number
  /** Called with each batch's contribution to the summaries. */
  onStats?: (stats: RunStats) => void
  /** Retry safety across turns (SPEC section 14): told what each batch added and resolved. */
  uncertain?: UncertainWrites
  /** Tenant-scoped conflict keys (SPEC section 17), the tenant key guard's gate; unset, such keys keep calls apart inside a batch only. */
  keys?: TenantKeyGate
  /** Batches with a call of a tool that requires approval wait for decisions (src/approvals); unset, nothing is held. */
  approvals?: ApprovalSettings
  /** The run-level rules, in the order their hooks run; unset, the registered ones (src/guards/index.ts). */
  guards?: readonly Guard[]
  /** Rules run after those (a test's probe). */
  moreGuards?: readonly Guard[]
  /** Rules left out, by name (the bench counts what each costs a batch: bench/guard-cost.ts). */
  withoutGuards?: readonly string[]
}

/** What the coordinator and the phases are handed: the engine's dependencies, its guards settled. */
export interface RunDeps extends EngineDeps {
  guards: readonly Guard[]
}

/** A batch as its request brings it. */
export interface BatchRequest {
  runId: string
  tenant: string
  /**
   * The creation time of the run the caller is bound to (an MCP session's
   * run): a run of the id created since is another run (SPEC section 19),
   * and the batch answers run_not_found. Unset: whichever run holds the id.
   */
  createdAt?: number | undefined
  /** The id of the request that brought the batch: its log lines carry it. */
  reqId?: string
  /** The name of the caller's key, when it has one (never the key), for its log lines. */
  keyName?: string
  scopes: ReadonlySet<string>
  batchId: string
  calls: RawCall[]
  usage?: { inputTokens?: number, outputTokens?: number }
  /**
   * The provider format the calls came in (src/formats), when they came in
   * one: the answer then holds `messages` in it. Plain data, so a batch
   * kept waiting can be stored with it and answered in it later.
   */
  format?: string
  /** The provider marked the response as cut short: every call is rejected, nothing runs. */
  incomplete?: boolean
  /** Host-visible events as they happen (server-sent events). */
  onEvent?: (event: BatchEvent) => void
  /** Aborted when the client of a streaming request goes away. */
  signal?: AbortSignal
  /** The caller's W3C trace context, continued by the batch's spans. */
  traceparent?: string
  tracestate?: string
  /** Scheduled by arrival behind a write that became uncertain: that write's call id (its writes are blocked, src/guards/arrivals.ts). */
  blockedBy?: string
  /** In this process only: the lease it shares with other batches of its run (MCP calls that arrive together), when it does. */
  shared?: SharedLease
  /** In this process only: its calls prepared before it was sent (`BatchEngine.prepareFirst`), to be scheduled. */
  preparedFirst?: PreparedFirst
}

/** A batch's calls prepared before it is sent, for the run's tool list `tools`; `holds`: a guard may hold it (approvals). */
export interface PreparedFirst {
  identified: IdentifiedCalls
  ready: Ready
  tools: readonly string[] | null
  holds: boolean
}

/** What `execute` answers: the response as JSON text, and what the request's log line says of the batch. */
export interface BatchAnswer {
  body: string
  /** The stored answer of a batch sent before. */
  replayed: boolean
  /** 202 while the batch waits for approvals; 200 when absent. */
  status?: 200 | 202
  /** runId, batchId and, for a batch that ran, turn, calls and outcome (the request's line has the duration); never arguments. */
  log: LineFields
}
