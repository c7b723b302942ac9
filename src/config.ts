/**
 * Configuration: read from the environment once at start, validated with
 * every problem reported at once, then frozen and passed in. Nothing else in
 * the code reads process.env. Each loop kind's two limits are settings too,
 * made from the registered kinds (src/repeat/kinds/).
 */
import { LOOP_KIND_LIST } from './repeat/kinds/index.js'
import { type LoopKinds, MAX_LOOP_LIMIT, loopLimitSettings } from './repeat/loops.js'

type Kind =
  | { kind: 'int', min: number, max: number }
  | { kind: 'bool' }
  | { kind: 'string' }
  | { kind: 'url', protocols: readonly string[] }
  | { kind: 'enum', values: readonly string[] }
  | { kind: 'origins' }

export interface Setting { env: string, default: unknown, help: string, spec: Kind }

const MiB = 1024 * 1024
const int = (min: number, max: number): { kind: 'int', min: number, max: number } => ({ kind: 'int', min, max })

/** The settings listed before the loop kinds' limits. */
const BEFORE_LOOPS = {
  port: { env: 'PORT', default: 8080, help: 'TCP port to listen on.', spec: int(0, 65535) },
  host: { env: 'HOST', default: null, help: 'Address to listen on. Unset: 127.0.0.1 when the service runs open (no TOOLGATE_API_KEYS_FILE), 0.0.0.0 with keys.', spec: { kind: 'string' } },
  logLevel: { env: 'LOG_LEVEL', default: 'info', help: 'pino log level.', spec: { kind: 'enum', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] } },
  toolsFile: { env: 'TOOLGATE_TOOLS_FILE', default: null, help: 'JSON or YAML file of tool definitions loaded at start. Unset: the bundled examples and their example executor.', spec: { kind: 'string' } },
  apiKeysFile: { env: 'TOOLGATE_API_KEYS_FILE', default: null, help: 'JSON or YAML file of API keys. Unset: the service runs open (one tenant, every role) and warns.', spec: { kind: 'string' } },
  maxConcurrentTools: { env: 'TOOLGATE_MAX_CONCURRENT_TOOLS', default: 8, help: 'Default cap of calls running at once inside an epoch.', spec: int(1, 256) }
} as const satisfies Record<string, Setting>

/** The settings listed after the loop kinds' limits. */
const AFTER_LOOPS = {
  maxCallsPerBatch: { env: 'TOOLGATE_MAX_CALLS_PER_BATCH', default: 128, help: 'Most calls one batch may hold.', spec: int(1, 10000) },
  runTtlSeconds: { env: 'TOOLGATE_RUN_TTL_SECONDS', default: 3600, help: 'Idle runs expire after this many seconds.', spec: int(1, 31 * 24 * 3600) },
  maxRuns: { env: 'TOOLGATE_MAX_RUNS', default: 100000, help: 'Most runs held at once; ended runs are evicted first, then the least recently used idle ones.', spec: int(1, 100_000_000) },
  receiptRetentionSeconds: { env: 'TOOLGATE_RECEIPT_RETENTION_SECONDS', default: 86400, help: 'Receipts are kept at least this long after their run.', spec: int(0, 365 * 24 * 3600) },
  maxReceipts: { env: 'TOOLGATE_MAX_RECEIPTS', default: 1_000_000, help: 'Bound on receipts held in memory; the oldest of runs that are gone and past retention go first.', spec: int(1, 100_000_000) },
  maxAnswerBytes: { env: 'TOOLGATE_MAX_ANSWER_BYTES', default: 256 * 1024 * 1024, help: 'Bound on the bytes of batch answers the memory store keeps for resends (as long as their run); over it the tenant whose runs hold the most gives up runs, its ended ones first, then its least recently used idle ones.', spec: int(1024, 2 ** 40) },
  maxReceiptBytes: { env: 'TOOLGATE_MAX_RECEIPT_BYTES', default: 128 * 1024 * 1024, help: 'Bound on the bytes of receipts held in memory (their JSON text; the heap they take is about twice that); over it the tenant holding the most gives up its oldest receipts first.', spec: int(1024, 2 ** 40) },
  maxExecutorResponseBytes: { env: 'TOOLGATE_MAX_EXECUTOR_RESPONSE_BYTES', default: MiB, help: 'Executor answers larger than this are not read whole (a write becomes uncertain).', spec: int(1, 1024 * MiB) },
  mcpMaxTools: { env: 'TOOLGATE_MCP_MAX_TOOLS', default: 1000, help: 'Most tools imported from one MCP server; the rest are reported in its lastError.', spec: int(1, 100_000) },
  bodyLimitBytes: { env: 'TOOLGATE_BODY_LIMIT_BYTES', default: MiB, help: 'Largest request body accepted.', spec: int(1, 1024 * MiB) },
  maxArgumentBytes: { env: 'TOOLGATE_MAX_ARGUMENT_BYTES', default: 256 * 1024, help: "Largest arguments of one call (as JSON); larger ones are rejected with reason invalid_arguments.", spec: int(1, 1024 * MiB) },
  authorizerUrl: { env: 'TOOLGATE_AUTHORIZER_URL', default: null, help: "External authorizer in Open Policy Agent's data-API shape, asked once per prepared call.", spec: { kind: 'url', protocols: ['http:', 'https:'] } },
  authorizerTimeoutMs: { env: 'TOOLGATE_AUTHORIZER_TIMEOUT_MS', default: 2000, help: 'Authorizer deadline; a late or failed answer rejects the call (fail closed).', spec: int(1, 600_000) },
  executorAllowedOrigins: { env: 'TOOLGATE_EXECUTOR_ALLOWED_ORIGINS', default: null, help: 'Comma-separated origins (scheme://host:port) executor URLs must belong to. Unset: any http(s) origin.', spec: { kind: 'origins' } },
  mcpAllowedOrigins: { env: 'TOOLGATE_MCP_ALLOWED_ORIGINS', default: null, help: "Comma-separated origins (scheme://host:port) whose browser pages may use toolgate's own MCP endpoint, beside loopback ones (DNS-rebinding protection).", spec: { kind: 'origins' } },
  metricsAuth: { env: 'TOOLGATE_METRICS_AUTH', default: false, help: 'Require the operator role for GET /metrics.', spec: { kind: 'bool' } },
  ui: { env: 'TOOLGATE_UI', default: true, help: 'Serve the operator page at /ui (static files; what it shows comes from the API, with the key the visitor signs in with).', spec: { kind: 'bool' } },
  store: { env: 'TOOLGATE_STORE', default: 'memory', help: "'memory', or a redis:// URL to share state between replicas.", spec: { kind: 'string' } },
  approvalTtlSeconds: { env: 'TOOLGATE_APPROVAL_TTL_SECONDS', default: 3600, help: 'A call waiting for a person longer than this is denied (approval_expired) and its batch runs.', spec: int(1, 31 * 24 * 3600) },
  leaseMs: { env: 'TOOLGATE_LEASE_MS', default: 30000, help: "How long a batch holds its run's lease without renewal (renewed every third of it); a replica that dies mid-batch frees the run after this long.", spec: int(2000, 3_600_000) },
  shutdownTimeoutMs: { env: 'TOOLGATE_SHUTDOWN_TIMEOUT_MS', default: 30000, help: 'On SIGTERM, how long batches in flight may take to finish before the process exits.', spec: int(0, 3_600_000) },
  requestTimeoutMs: { env: 'TOOLGATE_REQUEST_TIMEOUT_MS', default: 30000, help: 'A request (headers and body) not received whole within this is answered 408 and its connection closed; 0 turns it off. Only the receiving counts: a batch may run longer.', spec: int(0, 3_600_000) },
  headersTimeoutMs: { env: 'TOOLGATE_HEADERS_TIMEOUT_MS', default: 10000, help: "A request whose headers are not received whole within this is answered 408 and closed (at most TOOLGATE_REQUEST_TIMEOUT_MS); 0 leaves only the request timeout.", spec: int(0, 3_600_000) },
  maxSchemaBytes: { env: 'TOOLGATE_MAX_SCHEMA_BYTES', default: 256 * 1024, help: "Largest tool inputSchema (as JSON); a larger definition is refused (invalid_tool), an MCP server's tool is not imported.", spec: int(1024, 64 * MiB) },
  maxValidationMs: { env: 'TOOLGATE_MAX_VALIDATION_MS', default: 50, help: "Longest validation of one call's arguments, counted as the work it did (CPU time, not time spent waiting for a CPU); a call whose validation takes longer is rejected (invalid_arguments).", spec: int(1, 60_000) },
  maxRunsPerTenant: { env: 'TOOLGATE_MAX_RUNS_PER_TENANT', default: 10000, help: 'Most runs one tenant may hold at once; at the quota its ended run that ended first makes room, and with none ended one more is 429 quota_exceeded for that tenant.', spec: int(1, 100_000_000) },
  maxWaitingBatchesPerTenant: { env: 'TOOLGATE_MAX_WAITING_BATCHES_PER_TENANT', default: 100, help: "Most batches of one tenant waiting for approvals at once; another batch holding a call for approval is 429 quota_exceeded.", spec: int(1, 10_000_000) },
  rateLimitMax: { env: 'TOOLGATE_RATE_LIMIT_MAX', default: 0, help: 'Requests per key per window; 0 turns rate limiting off.', spec: int(0, 10_000_000) },
  rateLimitWindowMs: { env: 'TOOLGATE_RATE_LIMIT_WINDOW_MS', default: 60000, help: 'Rate-limit window.', spec: int(1, 3_600_000) },
  slowPreparationMs: { env: 'TOOLGATE_SLOW_PREPARATION_MS', default: 100, help: "A batch whose preparation (parsing, schema validation, rewrites, authorization) takes longer than this logs a warning: it held the event loop for every other request meanwhile.", spec: int(1, 600_000) },
  maxEventLoopDelayMs: { env: 'TOOLGATE_MAX_EVENT_LOOP_DELAY_MS', default: 0, help: 'Shed load (503 overloaded) when the event loop lags more than this; 0 turns it off.', spec: int(0, 600_000) },
  sseHeartbeatSeconds: { env: 'TOOLGATE_SSE_HEARTBEAT_SECONDS', default: 15, help: 'A streamed batch sends a comment line after this many quiet seconds, so idle proxies keep it open; 0 turns it off.', spec: int(0, 3600) },
  allowOpen: { env: 'TOOLGATE_ALLOW_OPEN', default: false, help: 'Start without TOOLGATE_API_KEYS_FILE although TOOLGATE_TOOLS_FILE is set and HOST is not a loopback address (refused otherwise).', spec: { kind: 'bool' } },
  recoveryWindowSeconds: { env: 'TOOLGATE_RECOVERY_WINDOW_SECONDS', default: 300, help: "How long after a write became uncertain its tool's executor.statusUrl is still asked, with backoff, for the outcome.", spec: int(0, 7 * 24 * 3600) },
  recoveryConcurrency: { env: 'TOOLGATE_RECOVERY_CONCURRENCY', default: 4, help: 'Status URL questions in flight at once per process (recovery of uncertain writes).', spec: int(1, 256) }
} as const satisfies Record<string, Setting>

/** Every setting of a list of loop kinds (the registered ones, or a test's), in the order `--help` and the docs give them. */
export function settingsWith (kinds: LoopKinds): Readonly<Record<string, Setting>> {
  const loops = Object.fromEntries(loopLimitSettings(kinds).map((s) => [s.name, { env: s.env, default: s.default, help: s.help, spec: int(0, MAX_LOOP_LIMIT) }]))
  return Object.freeze({ ...BEFORE_LOOPS, ...loops, ...AFTER_LOOPS })
}

/** Every setting, its environment variable, default and meaning. docs/configuration.md is checked against it. */
export const SETTINGS = settingsWith(LOOP_KIND_LIST)

type Settings = typeof BEFORE_LOOPS & typeof AFTER_LOOPS
type ValueOf<S extends Setting> =
  S['spec'] extends { kind: 'int' } ? number
    : S['spec'] extends { kind: 'bool' } ? boolean
      : S['spec'] extends { kind: 'origins' } ? readonly string[] | null
        : S['default'] extends null ? string | null : string

/** The validated, frozen configuration; the loop kinds' limits are there by their names (numbers). */
export type Config = { readonly [K in keyof Settings]: ValueOf<Settings[K]> } & Readonly<Record<string, unknown>>

/** Thrown when the environment is wrong; `problems` lists every problem at once. */
export class ConfigError extends Error {
  readonly problems: string[]
  constructor (problems: string[]) {
    super(`Invalid configuration:\n- ${problems.join('\n- ')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

function parseOne (setting: Setting, raw: string, problems: string[]): unknown {
  const { env, spec } = setting
  switch (spec.kind) {
    case 'int': {
      const n = /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN
      if (!Number.isSafeInteger(n) || n < spec.min || n > spec.max) {
        problems.push(`${env} must be an integer from ${spec.min} to ${spec.max}, got ${JSON.stringify(raw)}`)
      }
      return n
    }
    case 'bool': {
      const v = raw.trim().toLowerCase()
      if (['true', '1', 'yes', 'on'].includes(v)) return true
      if (['false', '0', 'no', 'off'].includes(v)) return false
      problems.push(`${env} must be true or false, got ${JSON.stringify(raw)}`)
      return false
    }
    case 'enum':
      if (!spec.values.includes(raw)) problems.push(`${env} must be one of ${spec.values.join(', ')}, got ${JSON.stringify(raw)}`)
      return raw
    case 'url': {
      let url: URL | undefined
      try { url = new URL(raw) } catch { /* reported below */ }
      if (url === undefined || !spec.protocols.includes(url.protocol)) {
        problems.push(`${env} must be an ${spec.protocols.map((p) => p.slice(0, -1)).join(' or ')} URL, got ${JSON.stringify(raw)}`)
      }
      return raw
    }
    case 'origins': {
      const origins: string[] = []
      for (const part of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
        try {
          const u = new URL(part)
          if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme')
          origins.push(u.origin)
        } catch {
          problems.push(`${env} must list http(s) origins separated by commas, got ${JSON.stringify(part)}`)
        }
      }
      return origins
    }
    case 'string':
      if (raw.trim() === '') problems.push(`${env} must not be empty`)
      return raw
  }
}

/** Reads and validates the configuration; throws ConfigError listing every problem. */
export function loadConfig (env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}, settings: Readonly<Record<string, Setting>> = SETTINGS): Config {
  const problems: string[] = []
  const out: Record<string, unknown> = {}
  for (const [key, setting] of Object.entries(settings)) {
    const raw = env[setting.env]
    out[key] = raw === undefined || raw === '' ? setting.default : parseOne(setting, raw, problems)
  }
  const store = out.store as string
  if (store !== 'memory' && !/^rediss?:\/\//.test(store)) problems.push(`TOOLGATE_STORE must be 'memory' or a redis:// URL, got ${JSON.stringify(store)}`)
  if (problems.length > 0) throw new ConfigError(problems)
  return Object.freeze({ ...out, ...overrides }) as Config
}

/** `TOOLGATE_*` names read by the examples, the tests and the bench rather than by the service. */
const OTHER_VARIABLES = /^TOOLGATE_(URL|API_KEY|POLL_SECONDS|NODE_FLAGS|UPDATE_SCREENSHOTS|TEST_[A-Z0-9_]+|BENCH_[A-Z0-9_]+)$/

/**
 * A warning for every `TOOLGATE_*` variable that is no setting (a misspelt
 * name is otherwise silently ignored), naming the closest setting.
 */
export function unknownVariables (env: Record<string, string | undefined> = process.env): string[] {
  const known = Object.values(SETTINGS).map((s) => s.env as string)
  const warnings: string[] = []
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('TOOLGATE_') || known.includes(name) || OTHER_VARIABLES.test(name)) continue
    const closest = known.map((k) => ({ k, d: editDistance(name, k) })).sort((a, b) => a.d - b.d)[0]
    const hint = closest !== undefined && closest.d <= Math.max(2, Math.floor(name.length / 5)) ? ` (did you mean ${closest.k}?)` : ''
    warnings.push(`${name} is not a toolgate setting and is ignored${hint}`)
  }
  return warnings
}

/** Levenshtein distance: the fewest one-character edits from a to b. */
function editDistance (a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    row = next
  }
  return row[b.length]!
}

/** The configuration with every default: for tests and embedding. */
export function defaultConfig (overrides: Partial<Config> = {}): Config {
  return loadConfig({}, overrides)
}
