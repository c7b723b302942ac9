import { pino, type Logger } from 'pino'
import { IsoTime } from './events/iso-time.js'

/**
 * Keys whose values never reach a log line, at any depth up to
 * MAX_REDACT_DEPTH. Arguments, executor bodies, receipts and credentials are
 * never logged in the first place; this is the second lock. Conflict keys and
 * fingerprints are derived from arguments.
 */
export const REDACTED_KEYS: ReadonlySet<string> = new Set([
  'authorization', 'cookie', 'apiKey',
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

/**
 * Stdout, written asynchronously in buffer mode: each line becomes bytes once
 * and lines that come while a write is pending go out together in one write,
 * so a busy batch path does not pay a syscall per line, and a quiet one still
 * shows each line at once. (sonic-boom's string mode measures the UTF-8 length
 * of the whole pending text again for every line it appends: under load that
 * was about as costly as formatting the line.) pino flushes it on exit, and
 * the server flushes it when it stops.
 */
function stdoutDestination (): pino.DestinationStream & { flush: (cb?: (err?: Error) => void) => void, flushSync: () => void } {
  const boom = pino.destination({ dest: 1, sync: false, contentMode: 'buffer' })
  return {
    write: (line: string) => boom.write(Buffer.from(line) as unknown as string),
    flush: (cb) => boom.flush(cb),
    flushSync: () => boom.flushSync()
  }
}

/** JSON lines on stdout (or `destination`), ISO times, `service: toolgate` on every line, sensitive keys censored. */
export function createLogger (level: string, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: { service: 'toolgate' },
    timestamp: isoTimestamp,
    formatters: { log: (obj) => redactSensitive(obj) }
  }, destination ?? stdoutDestination())
}
