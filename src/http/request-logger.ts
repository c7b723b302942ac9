import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions } from 'pino'

/**
 * A request's logger (`request.log`): pino's child bound to the request id,
 * made the first time something logs through it. Most requests never do
 * (their one access line is written by the root logger, with the request id
 * as its first field, which reads the same), so most never pay for a child.
 */
export class RequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger
  readonly #bindings: Bindings
  readonly #options: ChildLoggerOptions
  #child: FastifyBaseLogger | null = null

  constructor (parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
  }

  #real (): FastifyBaseLogger {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#options))
  }

  get level (): string {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level
  }

  set level (level: string) {
    this.#real().level = level
  }

  fatal (...args: unknown[]): void { forward(this.#real(), 'fatal', args) }
  error (...args: unknown[]): void { forward(this.#real(), 'error', args) }
  warn (...args: unknown[]): void { forward(this.#real(), 'warn', args) }
  info (...args: unknown[]): void { forward(this.#real(), 'info', args) }
  debug (...args: unknown[]): void { forward(this.#real(), 'debug', args) }
  trace (...args: unknown[]): void { forward(this.#real(), 'trace', args) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options)
  }
}

function forward (logger: FastifyBaseLogger, level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', args: unknown[]): void {
  Reflect.apply(logger[level], logger, args)
}
