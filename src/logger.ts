import { pino, type Logger } from 'pino'
import { IsoTime } from './events/iso-time.js'
import { jsonNumber, jsonString } from './json-text.js'

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

/** What pino needs of a destination it can flush. */
type FlushableDestination = pino.DestinationStream & { flush: (cb?: (err?: Error) => void) => void, flushSync: () => void }

/**
 * Stdout, one write per turn of the event loop: lines logged during a turn
 * are joined and written together, synchronously, once the turn's I/O
 * callbacks have run (setImmediate). A busy batch path pays one syscall for
 * all the lines of a turn and a quiet one still shows each line at once.
 *
 * Synchronous, as Node's own process.stdout is for pipes and files and as
 * pino's default destination is: an asynchronous write goes through libuv's
 * thread pool, and the hand-over to a worker thread and back cost about
 * 20 µs per write on the bench's machine (a fifth of a 1-call batch), far
 * more than the write itself. The trade is the usual one: a log reader that
 * stops reading a full pipe blocks the process (sonic-boom retries EAGAIN)
 * instead of letting its memory grow. What is pending when the process exits
 * is written on `exit`, so process.exit loses no line.
 *
 * One per process: every logger on stdout shares it, so lines keep their order.
 */
class StdoutLines implements FlushableDestination {
  readonly #out = pino.destination({ dest: 1, sync: true })
  #pending = ''
  #scheduled = false
  readonly #onTurnEnd = (): void => {
    this.#scheduled = false
    this.#writePending()
  }

  constructor () {
    process.once('exit', () => { this.#writePending() })
  }

  write (line: string): void {
    this.#pending += line
    if (!this.#scheduled) {
      this.#scheduled = true
      setImmediate(this.#onTurnEnd)
    }
  }

  flush (cb?: (err?: Error) => void): void {
    this.#writePending()
    cb?.()
  }

  flushSync (): void {
    this.#writePending()
  }

  #writePending (): void {
    if (this.#pending === '') return
    const text = this.#pending
    this.#pending = ''
    this.#out.write(text)
  }
}

let stdoutLines: StdoutLines | undefined

/** Every logged object passes here before pino writes it. */
function censorLine (obj: Record<string, unknown>): Record<string, unknown> {
  return redactSensitive(obj)
}

/** JSON lines on stdout (or `destination`), ISO times, `service: toolgate` on every line, sensitive keys censored. */
export function createLogger (level: string, destination?: pino.DestinationStream, mixin?: () => Record<string, unknown>): Logger {
  return pino({
    level,
    base: { service: 'toolgate' },
    timestamp: isoTimestamp,
    formatters: { log: censorLine },
    // Fields added to every line, e.g. the active span's trace_id and span_id (src/telemetry/tracing.ts).
    ...(mixin === undefined ? {} : { mixin })
  }, destination ?? (stdoutLines ??= new StdoutLines()))
}

/** A flat log record, as a request's line carries what its batch did. */
export type LineFields = Record<string, string | number | boolean>

/** `,"key":value` for each field, as logFields takes them. */
export function fieldsText (fields: LineFields): string {
  let out = ''
  for (const key in fields) {
    const value = fields[key]!
    out += `,${jsonString(key)}:${typeof value === 'string' ? jsonString(value) : typeof value === 'number' ? jsonNumber(value) : String(value)}`
  }
  return out
}

/** The levels logFields writes. */
export type LineLevel = 'debug' | 'info' | 'warn' | 'error'

/** The parts of a pino logger logFields reads (pino.symbols). */
interface PinoParts {
  levels: { values: Record<string, number> }
  isLevelEnabled: (level: string) => boolean
  [key: symbol]: unknown
}

const SYM = pino.symbols
/** pino has it, its types do not. */
const MSG_PREFIX = (SYM as unknown as Record<string, symbol | undefined>).msgPrefixSym

/**
 * Writes the line `logger[level](fields, msg)` writes, from fields that are
 * JSON text already: `,"key":value` pairs, none of them a key the censor
 * removes (REDACTED_KEYS). pino's own path walks the object key by key,
 * looking each key up in its serializer and stringifier tables; for the one
 * line every request writes, that walk was a tenth of a 1-call batch's
 * instructions (counted; in wall time about 0.7 µs of a line's 2.5).
 *
 * The line is pino's own: its level prefix, time, bindings and line end,
 * written to its stream. A logger whose line this cannot reproduce exactly
 * (not made by createLogger, or given a mixin, hooks, a nested key, a message
 * prefix or metadata-reading streams) gets the parsed fields through its
 * own method instead.
 */
export function logFields (logger: unknown, level: LineLevel, fields: string, msg: string): void {
  const p = logger as PinoParts
  if (!writesPlainLines(p)) {
    (logger as Logger)[level](JSON.parse(`{${fields.slice(1)}}`) as object, msg)
    return
  }
  if (!p.isLevelEnabled(level)) return
  const prefix = (p[SYM.lsCacheSym] as Record<number, string>)[p.levels.values[level]!]!
  const line = prefix + (p[SYM.timeSym] as () => string)() + (p[SYM.chindingsSym] as string) + fields +
    ',"msg":' + jsonString(msg) + (p[SYM.endSym] as string)
  ;(p[SYM.streamSym] as pino.DestinationStream).write(line)
}

/** Whether pino would write a line of `logger` as logFields does. */
function writesPlainLines (p: PinoParts): boolean {
  const formatters = p[SYM.formattersSym] as { log?: unknown } | undefined
  const hooks = p[SYM.hooksSym] as { logMethod?: unknown, streamWrite?: unknown } | undefined
  const stream = p[SYM.streamSym] as Record<symbol, unknown> | undefined
  return formatters?.log === censorLine && p[SYM.messageKeySym] === 'msg' &&
    p[SYM.mixinSym] == null && p[SYM.nestedKeySym] == null && (MSG_PREFIX === undefined || p[MSG_PREFIX] == null) &&
    hooks?.logMethod == null && hooks?.streamWrite == null &&
    stream !== undefined && stream[SYM.needsMetadataGsym] !== true
}
