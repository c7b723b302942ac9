/**
 * OTLP trace export, configured by OpenTelemetry's standard environment
 * variables. Nothing is loaded unless an endpoint is set: without one,
 * toolgate's spans are never made (see tracing.ts).
 */
import { propagation, trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import type * as Resources from '@opentelemetry/resources'

/** The environment variables startOtel reads (a subset of process.env). */
export type OtelEnv = Readonly<Record<string, string | undefined>>

/** Stops the export: flushes the spans still queued, then unregisters the tracer provider. */
export type OtelShutdown = () => Promise<void>

/** A setting of the OTEL_* variables that cannot work; the message names it and its value. */
export class OtelConfigError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'OtelConfigError'
  }
}

/**
 * Starts a tracer provider exporting spans over OTLP/HTTP (JSON) when
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set,
 * and registers it, with the W3C trace-context propagator, as the global one.
 * Honours OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER=none, OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES and the OTLP headers variables; the sampler and
 * batch-processor variables are read by the SDK itself.
 */
export async function startOtel (env: OtelEnv = process.env): Promise<OtelShutdown> {
  const url = tracesUrl(env)
  if (url === null || isTrue(env.OTEL_SDK_DISABLED) || env.OTEL_TRACES_EXPORTER?.trim() === 'none') return async () => {}

  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources')
  ])
  const exporter = new OTLPTraceExporter({ url, headers: { ...parseList(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseList(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) } })
  const provider = new BasicTracerProvider({
    resource: serviceResource(resources, env),
    spanProcessors: [new BatchSpanProcessor(exporter)]
  })
  if (!trace.setGlobalTracerProvider(provider)) {
    await provider.shutdown()
    throw new OtelConfigError('A global tracer provider is registered already; startOtel must be called once.')
  }
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())

  let stopped = false
  return async () => {
    if (stopped) return
    stopped = true
    try {
      await provider.shutdown()
    } finally {
      trace.disable()
      propagation.disable()
    }
  }
}

/** The traces URL: the signal's own endpoint as given, or the general one with `/v1/traces` added. */
export function tracesUrl (env: OtelEnv): string | null {
  const own = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()
  if (own !== undefined && own !== '') return httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', own)
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  if (base === undefined || base === '') return null
  httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base)
  return base.endsWith('/') ? `${base}v1/traces` : `${base}/v1/traces`
}

function httpUrl (name: string, value: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new OtelConfigError(`Expected ${name} to be an http or https URL, got ${JSON.stringify(value)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OtelConfigError(`Expected ${name} to be an http or https URL, got ${JSON.stringify(value)}`)
  }
  return value
}

function serviceResource (resources: typeof Resources, env: OtelEnv): Resources.Resource {
  const attributes: Record<string, string> = { 'service.name': 'toolgate', ...parseList(env.OTEL_RESOURCE_ATTRIBUTES) }
  const name = env.OTEL_SERVICE_NAME?.trim()
  if (name !== undefined && name !== '') attributes['service.name'] = name
  return resources.defaultResource().merge(resources.resourceFromAttributes(attributes))
}

/** `key1=value1,key2=value2` with percent-encoded values, as the OTEL_* list variables are written. */
export function parseList (raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  if (raw === undefined) return out
  for (const item of raw.split(',')) {
    const eq = item.indexOf('=')
    if (eq <= 0) continue
    const key = item.slice(0, eq).trim()
    try {
      out[key] = decodeURIComponent(item.slice(eq + 1).trim())
    } catch {
      out[key] = item.slice(eq + 1).trim()
    }
  }
  return out
}

function isTrue (value: string | undefined): boolean {
  return value?.trim().toLowerCase() === 'true'
}
