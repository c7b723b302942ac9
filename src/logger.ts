import { pino, type Logger } from 'pino'
import { IsoTime } from './iso-time.js'

/**
 * Keys whose values never reach a log line, at any depth up to
 * MAX_REDACT_DEPTH. Arguments, executor bodies, receipts and credentials are
 * never logged in the first place; this is the second lock. Conflict keys and
 * fingerprints are derived from arguments.
 */
export const REDACTED_KEYS: ReadonlySet<string> = new Set([
  'authorization', 'cookie', 'apiKey', 'clientSecret', 'privateKey', 'accessToken',
  'arguments', 'body', 'bodyText', 'content', 'intent', 'receipt',
  'conflictKey', 'fingerprint'
])

/** The censor written in place of a redacted value. */
export const REDACTED = '[redacted]'

/** How deep `redactSensitive` looks; anything deeper is censored whole. */
export const MAX_REDACT_DEPTH = 6

/**
 * A log object with the value of every key in REDACTED_KEYS censored. Walks
 * without copying and copies only the objects on the way to a censored key,
 * so the usual line (nothing to censor) costs one pass over a few keys.
 * Errors keep their type, message and stack. pino's own `redact` option
 * does the same job with path patterns at several times the cost per line.
 */
export function redactSensitive<T> (value: T, depth = 0): T {
  if (typeof value !== 'object' || value === null) return value
  if (depth >= MAX_REDACT_DEPTH) return REDACTED as T
  if (Array.isArray(value)) {
    let out: unknown[] | null = null
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i]
      const r = redactSensitive(v, depth + 1)
      if (r !== v) (out ??= value.slice())[i] = r
    }
    return (out ?? value) as T
  }
  let out: Record<string, unknown> | null = null
  const obj = value as Record<string, unknown>
  for (const key of Object.keys(obj)) {
    const v = obj[key]
    const r = REDACTED_KEYS.has(key) ? REDACTED : redactSensitive(v, depth + 1)
    if (r !== v) (out ??= copyOf(obj))[key] = r
  }
  return (out ?? value) as T
}

/** A plain copy to censor; an Error keeps what its serializer would show. */
function copyOf (obj: Record<string, unknown>): Record<string, unknown> {
  if (obj instanceof Error) return Object.assign({ type: obj.name, message: obj.message, stack: obj.stack }, obj)
  return { ...obj }
}

const LINE_TIMES = new IsoTime()

/** pino's ISO `time` field, formatted once per millisecond rather than once per line. */
function isoTimestamp (): string {
  return `,"time":"${LINE_TIMES.at(Date.now())}"`
}

/** Lines are written to stdout once this many bytes are pending… */
export const STDOUT_BLOCK_BYTES = 4096
/** …or this long after the last write, whichever comes first. */
export const STDOUT_FLUSH_MS = 100

/**
 * Stdout through sonic-boom (pino's own destination), synchronous and in
 * blocks: lines are joined until STDOUT_BLOCK_BYTES are pending (or
 * STDOUT_FLUSH_MS passed), then written with one syscall. Synchronous, as
 * Node's own process.stdout is for pipes and files: an asynchronous write
 * goes through libuv's thread pool, whose hand-over costs more than the
 * write itself (docs/performance.md). The trade is
 * the usual one: a log reader that stops reading a full pipe blocks the
 * process (sonic-boom retries EAGAIN) instead of letting its memory grow.
 * What is pending when the process exits is written on `exit`, so
 * process.exit loses no line (pino flushes only asynchronous destinations).
 *
 * One per process: every logger on stdout shares it, so lines keep their order.
 */
function stdoutLines (): pino.DestinationStream {
  const out = pino.destination({ dest: 1, sync: true, minLength: STDOUT_BLOCK_BYTES, periodicFlush: STDOUT_FLUSH_MS })
  process.once('exit', () => {
    try { out.flushSync() } catch { /* stdout is gone: nothing to write to */ }
  })
  return out
}

let stdout: pino.DestinationStream | undefined

/** Every logged object passes here before pino writes it. */
function censorLine (obj: Record<string, unknown>): Record<string, unknown> {
  return redactSensitive(obj)
}

export interface LoggerOptions {
  /**
   * Fields added to every line (pino's `mixin`), e.g. the active span's
   * trace id; they pass the censor like the line's own.
   */
  mixin?: () => Record<string, unknown>
}

/** JSON lines on stdout (or `destination`), ISO times, `service: toolgate` on every line, sensitive keys censored. */
export function createLogger (level: string, destination?: pino.DestinationStream, opts: LoggerOptions = {}): Logger {
  return pino({
    level,
    base: { service: 'toolgate' },
    timestamp: isoTimestamp,
    formatters: { log: censorLine },
    ...(opts.mixin === undefined ? {} : { mixin: opts.mixin })
  }, destination ?? (stdout ??= stdoutLines()))
}

/** A flat log record, as a request's line carries what its batch did. */
export type LineFields = Record<string, string | number | boolean>
