/**
 * An in-memory tracer provider for a test file (tap runs each file in its
 * own process), registered with the context manager startOtel registers,
 * and lookups over the spans it finished.
 */
import { SpanKind, context, trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { AsyncContextManager } from '../../src/telemetry/context.js'
import { ATTR } from '../../src/telemetry/tracing.js'

export interface Spans {
  exporter: InMemorySpanExporter
  all (): ReadableSpan[]
  named (name: string): ReadableSpan[]
  /** The one span of that name; throws (listing what there is) otherwise. */
  one (name: string): ReadableSpan
  /** The `execute_tool` span of a call. */
  call (callId: string): ReadableSpan
  /** The CLIENT spans whose parent is `span`. */
  clientsUnder (span: ReadableSpan): ReadableSpan[]
}

export const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId
export const idOf = (s: ReadableSpan): string => s.spanContext().spanId
/** The traceparent a request made under `s` carries. */
export const traceparentOf = (s: ReadableSpan): string => `00-${s.spanContext().traceId}-${idOf(s)}-01`

export function recordSpans (t: { teardown: (fn: () => unknown) => void, beforeEach: (fn: () => void) => void }): Spans {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  trace.setGlobalTracerProvider(provider)
  context.setGlobalContextManager(new AsyncContextManager())
  t.teardown(() => provider.shutdown())
  t.beforeEach(() => exporter.reset())
  const all = (): ReadableSpan[] => exporter.getFinishedSpans()
  const named = (name: string): ReadableSpan[] => all().filter((s) => s.name === name)
  return {
    exporter,
    all,
    named,
    one (name) {
      const list = named(name)
      if (list.length !== 1) throw new Error(`expected one span ${name}, got ${list.length}: ${all().map((s) => s.name).join(', ')}`)
      return list[0]!
    },
    call (callId) {
      const s = all().find((x) => x.attributes[ATTR.toolCallId] === callId && x.name.startsWith('execute_tool'))
      if (s === undefined) throw new Error(`no span for call ${callId}`)
      return s
    },
    clientsUnder (span) {
      return all().filter((x) => x.kind === SpanKind.CLIENT && parentOf(x) === idOf(span))
    }
  }
}
