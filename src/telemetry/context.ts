import { AsyncLocalStorage } from 'node:async_hooks'
import { type Context, type ContextManager, ROOT_CONTEXT } from '@opentelemetry/api'

/**
 * OpenTelemetry's active context kept in an AsyncLocalStorage, as the SDK's
 * context-async-hooks package does: a span made active around a request's
 * handler is the parent of what that handler awaits, and log lines written
 * meanwhile can name it (traceLogFields in tracing.ts). toolgate does not use
 * the package to save a dependency; only functions are bound (event emitters
 * are given back as they are: nothing here binds them).
 */
export class AsyncContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>()

  active (): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>> (ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.#storage.run(ctx, () => fn.apply(thisArg, args))
  }

  bind<T> (ctx: Context, target: T): T {
    if (typeof target !== 'function') return target
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const manager = this
    return function (this: unknown, ...args: unknown[]) {
      return manager.with(ctx, () => (target as (...a: unknown[]) => unknown).apply(this, args))
    } as T
  }

  enable (): this { return this }

  disable (): this {
    this.#storage.disable()
    return this
  }
}
