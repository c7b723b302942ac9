import { pino, type Logger } from 'pino'

/**
 * Paths pino redacts wherever they appear. Arguments, executor bodies and
 * credentials are never logged in the first place; this is the second lock.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'arguments',
  '*.arguments',
  'body',
  '*.body',
  'intent',
  '*.intent'
]

export function createLogger (level: string, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: { service: 'toolgate' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' }
  }, destination)
}
