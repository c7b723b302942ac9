import { resetGuards } from './guards/index.js'
import type { Guard } from './guards/types.js'
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import { KeyRing } from './auth/keys.js'
import { BatchEngine } from './batch/engine.js'
import type { Config } from './config.js'
import { ExecutorClient } from './dispatch/client.js'
import { HttpExecutor } from './dispatch/http-executor.js'
import type { ExternalAuthorizer } from './prepare/authorize.js'
import { RunService } from './runs/service.js'
import { createStore, createToolPins } from './store/create.js'
import type { Store } from './store/types.js'
import { type Telemetry } from './telemetry/types.js'
import { createTelemetry, type TelemetryHandle } from './telemetry/index.js'
import { meteredAuthorizer } from './telemetry/authorizer-metrics.js'
import { meteredStore } from './telemetry/store-metrics.js'
import { TracedExecutor } from './telemetry/client-spans.js'
import { ToolRegistry } from './tools/registry.js'
import { ProjectionPool } from './receipts/projection-pool.js'
import { createAuthorizer } from './auth/authorizer.js'
import { McpServers } from './mcp/servers.js'
import type { ToolPins } from './store/tool-pins.js'
import type { ReconnectPolicy } from './mcp/connection.js'
import { UncertainWrites, type UncertainWritesOptions } from './uncertain/service.js'
import { TenantKeyGate } from './conflicts/gate.js'
import { ConflictMetrics } from './conflicts/metrics.js'
import { ApprovalService } from './approvals/service.js'
import { Elicitations } from './approvals/elicitations.js'
import { type Clock, systemClock } from './clock.js'
import { McpGateway } from './mcp-server/gateway.js'
import { CallRelays } from './dispatch/relays.js'
import { listenHost } from './auth/open-mode.js'
import { isLoopbackAddress, normalizeOrigin } from './mcp-server/origin.js'
import { OneCallTurns } from './mcp-server/turns.js'
import { LOOP_KIND_LIST } from './repeat/kinds/index.js'
import { pickLoopLimits } from './repeat/loops.js'

/** Everything the routes use; built once per app instance. */
export interface Services {
  config: Config
  tools: ToolRegistry
  store: Store
  client: ExecutorClient
  /** The MCP servers tools are imported from. */
  mcp: McpServers
  /** toolgate's own MCP endpoint: its sessions (SPEC section 16). */
  mcpGateway: McpGateway
  engine: BatchEngine
  runs: RunService
  approvals: ApprovalService
  /** Questions MCP servers ask during calls, waiting for an answer (SPEC section 18). */
  elicitations: Elicitations
  keys: KeyRing
  telemetry: TelemetryHandle
  replicaId: string
  /** Retry safety across turns: resolution, recovery (SPEC section 14). */
  uncertain: UncertainWrites
  /** Set on SIGTERM: /readyz turns false and new batches are refused. */
  draining: boolean
  close (): Promise<void>
}

export interface ServiceOverrides {
  store?: Store
  keys?: KeyRing
  tools?: ToolRegistry
  authorizer?: ExternalAuthorizer
  telemetry?: Telemetry
  leaseMs?: number
  /** How MCP servers are reconnected (tests shorten it). */
  mcpReconnect?: ReconnectPolicy
  /** Where MCP tool definitions are pinned; default the store's (a test gives replicas one to share). */
  toolPins?: ToolPins
  /** Told of every recovery attempt (tests). */
  uncertain?: Pick<UncertainWritesOptions, 'onRecoveryAttempt'>
  /**
   * The clock of every deadline, lease, TTL and expiry, and of the times
   * answers carry: tests put one in they move by hand. @default systemClock
   */
  clock?: Clock
  /** How often this replica sweeps for expired approvals; 0 leaves it to `approvals.sweep()`. @default 1000 */
  approvalSweepMs?: number
  /** Where MCP servers' `oauth` secrets named by environment variable are read. @default process.env */
  env?: Readonly<Record<string, string | undefined>>
  /** Run-level rules after the registered ones (src/guards/): a test's probe of the guard seam. */
  moreGuards?: readonly Guard[]
  /** Registered run-level rules left out, by name: the bench's count of what each costs (bench/guard-cost.ts). */
  withoutGuards?: readonly string[]
}

/** How often each replica looks for approvals past their time: a call expires at most this late. */
const APPROVAL_SWEEP_MS = 1000


export function createServices (config: Config, logger: Logger, overrides: ServiceOverrides = {}): Services {
  const runTtlMs = config.runTtlSeconds * 1000
  const clock = overrides.clock ?? systemClock
  const unmetered = overrides.store ?? createStore(config, logger, clock)
  // Its workers start with the first projection evaluated, not with the service.
  const projections = new ProjectionPool()
  const tools = overrides.tools ?? new ToolRegistry({ allowedOrigins: config.executorAllowedOrigins, maxSchemaBytes: config.maxSchemaBytes, maxValidationMs: config.maxValidationMs, projections })
  const client = new ExecutorClient({ maxResponseBytes: config.maxExecutorResponseBytes, clock })
  const telemetry = createTelemetry({ logger, store: unmetered, toolNames: () => tools.list().map((t) => t.name), extra: overrides.telemetry })
  // Everything but the scrape's own gauges goes through the timed store.
  const store = meteredStore(unmetered, telemetry.metrics.registry)
  const external = overrides.authorizer ?? (config.authorizerUrl === null ? undefined : createAuthorizer({ url: config.authorizerUrl, timeoutMs: config.authorizerTimeoutMs }))
  const authorizer = external === undefined ? undefined : meteredAuthorizer(external, telemetry.metrics.registry)
  const replicaId = randomUUID()
  const relays = new CallRelays()
  const elicitations = new Elicitations({
    clock,
    ttlMs: config.approvalTtlSeconds * 1000,
    tenantOf: async (runId) => (await store.getRun(runId))?.tenant,
    // Ids and the action only: never the question or the content.
    onAnswered: (call, action, by) => { logger.info({ runId: call.runId, batchId: call.batchId, callId: call.callId, tool: call.tool, action, by }, 'server question answered') }
  })
  const pins = overrides.toolPins ?? createToolPins(config, logger)
  const mcp = new McpServers({
    relays,
    elicitations,
    tools,
    logger,
    metrics: telemetry.metrics.registry,
    allowedOrigins: config.executorAllowedOrigins,
    clock,
    maxTools: config.mcpMaxTools,
    maxResponseBytes: config.maxExecutorResponseBytes,
    pins,
    // Read here, once: the only secrets taken from the environment are those a server's oauth names (MCP_SECRET_*).
    env: overrides.env ?? process.env,
    ...(overrides.mcpReconnect === undefined ? {} : { reconnect: overrides.mcpReconnect })
  })
  const uncertain = new UncertainWrites({
    store,
    tools,
    logger,
    registry: telemetry.metrics.registry,
    replicaId,
    recoveryWindowMs: config.recoveryWindowSeconds * 1000,
    recoveryConcurrency: config.recoveryConcurrency,
    clock,
    ...overrides.uncertain
  })
  const tenantKeys = new TenantKeyGate({ store, leaseMs: overrides.leaseMs ?? config.leaseMs, clock, metrics: new ConflictMetrics(telemetry.metrics.registry), logger })
  const engine = new BatchEngine({
    store,
    tools,
    http: new TracedExecutor(new HttpExecutor(client)),
    telemetry,
    ...(authorizer === undefined ? {} : { authorizer }),
    clock,
    logger,
    replicaId,
    leaseMs: overrides.leaseMs ?? config.leaseMs,
    maxArgumentBytes: config.maxArgumentBytes,
    slowPreparationMs: config.slowPreparationMs,
    onStats: (stats) => telemetry.summary.add(stats),
    uncertain,
    keys: tenantKeys,
    ...(overrides.moreGuards === undefined ? {} : { moreGuards: overrides.moreGuards }),
    ...(overrides.withoutGuards === undefined ? {} : { withoutGuards: overrides.withoutGuards }),
    approvals: { ttlMs: config.approvalTtlSeconds * 1000, graceMs: runTtlMs }
  })
  const approvals = new ApprovalService({
    store,
    engine,
    tools,
    authorizer,
    registry: telemetry.metrics.registry,
    logger,
    maxArgumentBytes: config.maxArgumentBytes,
    clock,
    sweepIntervalMs: overrides.approvalSweepMs ?? APPROVAL_SWEEP_MS
  })
  const runs = new RunService({
    store,
    runTtlMs,
    maxConcurrentTools: config.maxConcurrentTools,
    // The settings carry the limits' own names.
    loopDefaults: pickLoopLimits(config, LOOP_KIND_LIST),
    onTimedOut: (runId) => telemetry.runTerminated(runId, 'timeout'),
    onCancelledWaiting: (runId) => approvals.settleCancelled(runId),
    reset: (run, cause) => { resetGuards(engine.guards, run, cause) },
    logger,
    clock
  })
  const keys = overrides.keys ?? new KeyRing()
  const turns = new OneCallTurns({ engine, approvals, store, clock, logger, relays, describe: (name) => tools.get(name)?.description ?? '' })
  const mcpGateway = new McpGateway({
    runs,
    tools,
    turns,
    origins: {
      allowedOrigins: new Set((config.mcpAllowedOrigins ?? []).map((o) => normalizeOrigin(o) ?? o)),
      // The address src/server.ts listens on: HOST, else loopback for an open service.
      loopbackListen: isLoopbackAddress(listenHost(config.host, keys.open))
    },
    registry: telemetry.metrics.registry,
    logger,
    clock,
    idleMs: runTtlMs,
    approvalTtlMs: config.approvalTtlSeconds * 1000
  })
  const services: Services = {
    config,
    tools,
    store,
    client,
    mcp,
    mcpGateway,
    engine,
    runs,
    approvals,
    elicitations,
    keys,
    telemetry,
    replicaId,
    uncertain,
    draining: false,
    async close () {
      await mcpGateway.close()
      approvals.close()
      engine.close()
      await mcp.close()
      if (overrides.toolPins === undefined) await pins.close()
      await uncertain.close()
      await projections.close()
      await client.close()
      await store.close()
      // The validation thread, if a large call started one; a registry given in is its giver's to close.
      if (overrides.tools === undefined) await tools.close()
    }
  }
  return services
}
