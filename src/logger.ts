import { pino, type Logger } from 'pino'

/**
 * Paths pino redacts wherever they appear. Arguments, executor bodies,
 * receipts and credentials are never logged in the first place; this is the
 * second lock. Conflict keys and fingerprints are derived from arguments.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  '*.headers.authorization',
  'authorization',
  '*.authorization',
  'apiKey',
  '*.apiKey',
  'arguments',
  '*.arguments',
  '*.*.arguments',
  'body',
  '*.body',
  'bodyText',
  '*.bodyText',
  'content',
  '*.content',
  'intent',
  '*.intent',
  'receipt',
  '*.receipt',
  'conflictKey',
  '*.conflictKey',
  'fingerprint',
  '*.fingerprint'
]

/** The censor written in place of a redacted value. */
export const REDACTED = '[redacted]'

/**
 * JSON lines on stdout (or `destination`), ISO times, `service: toolgate` on
 * every line. Stdout is written asynchronously: lines that come while a
 * write is pending go out together, so a busy batch path does not pay a
 * write per line, and a quiet one still shows each line at once. pino
 * flushes it on exit, and the server flushes it when it stops.
 */
export function createLogger (level: string, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: { service: 'toolgate' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACT_PATHS, censor: REDACTED }
  }, destination ?? pino.destination({ dest: 1, sync: false }))
}
