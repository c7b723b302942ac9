/**
 * OTLP trace export, configured by OpenTelemetry's standard environment
 * variables. Nothing is loaded unless an endpoint is set: without one,
 * toolgate's spans are never made (see tracing.ts).
 */
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { context, propagation, trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import type * as Resources from '@opentelemetry/resources'
import { AsyncContextManager } from './context.js'

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

/** The OTLP encodings toolgate can send: OTLP/HTTP with a protobuf or a JSON body. */
export type OtlpProtocol = 'http/protobuf' | 'http/json'

/** The export timeout when neither OTEL_EXPORTER_OTLP_TRACES_TIMEOUT nor OTEL_EXPORTER_OTLP_TIMEOUT is set (the spec's default). */
export const DEFAULT_EXPORT_TIMEOUT_MS = 10_000

/** How spans are exported: where, in which encoding, with which headers, for how long at most. */
export interface ExportSettings {
  url: string
  protocol: OtlpProtocol
  /** Sent with every export; their values are never logged nor put in an error message. */
  headers: Record<string, string>
  timeoutMillis: number
}

/**
 * Whether startOtel would export spans under this environment: an endpoint
 * is set, the SDK is not disabled and the traces exporter is not `none`.
 * The server reads it before building its logger (log lines then carry
 * trace_id and span_id).
 */
export function otelEnabled (env: OtelEnv): boolean {
  return tracesUrl(env) !== null && !isTrue(env.OTEL_SDK_DISABLED) && env.OTEL_TRACES_EXPORTER?.trim() !== 'none'
}

/**
 * The export settings the standard OTLP variables give, the traces-specific
 * one first: OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _PROTOCOL (http/protobuf,
 * the spec's default, or http/json), _HEADERS (merged, the traces ones win)
 * and _TIMEOUT (milliseconds). Null when tracing is off. A setting that
 * cannot work is an OtelConfigError naming it.
 */
export function exportSettings (env: OtelEnv): ExportSettings | null {
  if (!otelEnabled(env)) return null
  return {
    url: tracesUrl(env)!,
    protocol: protocolOf(env),
    headers: { ...parseList(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseList(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
    timeoutMillis: timeoutOf(env)
  }
}

/**
 * Starts a tracer provider exporting spans over OTLP/HTTP when
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set,
 * and registers it, with the W3C trace-context propagator and an
 * AsyncLocalStorage context manager, as the global one. Honours
 * OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER=none, OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES and the settings exportSettings reads; the
 * sampler and batch-processor variables are read by the SDK itself.
 */
export async function startOtel (env: OtelEnv = process.env): Promise<OtelShutdown> {
  const settings = exportSettings(env)
  if (settings === null) return async () => {}

  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    settings.protocol === 'http/protobuf' ? import('@opentelemetry/exporter-trace-otlp-proto') : import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources')
  ])
  const { url, headers, timeoutMillis } = settings
  const exporter = new OTLPTraceExporter({ url, headers, timeoutMillis })
  const provider = new BasicTracerProvider({
    resource: serviceResource(resources, env),
    spanProcessors: [new BatchSpanProcessor(exporter)]
  })
  if (!trace.setGlobalTracerProvider(provider)) {
    await provider.shutdown()
    throw new OtelConfigError('A global tracer provider is registered already; startOtel must be called once.')
  }
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  context.setGlobalContextManager(new AsyncContextManager())

  let stopped = false
  return async () => {
    if (stopped) return
    stopped = true
    try {
      await provider.shutdown()
    } finally {
      trace.disable()
      propagation.disable()
      context.disable()
    }
  }
}

function protocolOf (env: OtelEnv): OtlpProtocol {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const value = env[name]?.trim()
    if (value === undefined || value === '') continue
    if (value === 'http/protobuf' || value === 'http/json') return value
    throw new OtelConfigError(`Expected ${name} to be http/protobuf or http/json (grpc is not supported), got ${JSON.stringify(value)}`)
  }
  return 'http/protobuf'
}

function timeoutOf (env: OtelEnv): number {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT']) {
    const value = env[name]?.trim()
    if (value === undefined || value === '') continue
    const ms = Number(value)
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(ms) || ms <= 0) {
      throw new OtelConfigError(`Expected ${name} to be a positive whole number of milliseconds, got ${JSON.stringify(value)}`)
    }
    return ms
  }
  return DEFAULT_EXPORT_TIMEOUT_MS
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

/** This process's id on the resource: replicas of one deployment share service.name and tell apart by it. */
const INSTANCE_ID = randomUUID()

/** toolgate's version (package.json beside dist/, or beside src/ when run from source). */
export const SERVICE_VERSION = readVersion()

function readVersion (): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    const path = new URL(up, import.meta.url)
    if (!existsSync(path)) continue
    const pkg = JSON.parse(readFileSync(path, 'utf8')) as { name?: string, version?: string }
    if (pkg.name === 'toolgate' && typeof pkg.version === 'string') return pkg.version
  }
  return 'unknown'
}

/** service.name, service.version and service.instance.id; OTEL_RESOURCE_ATTRIBUTES may set any of them, OTEL_SERVICE_NAME wins for the name. */
function serviceResource (resources: typeof Resources, env: OtelEnv): Resources.Resource {
  const attributes: Record<string, string> = {
    'service.name': 'toolgate',
    'service.version': SERVICE_VERSION,
    'service.instance.id': INSTANCE_ID,
    ...parseList(env.OTEL_RESOURCE_ATTRIBUTES)
  }
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
