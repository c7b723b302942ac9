import { promisify } from 'node:util'
import { gzip as gzipCallback } from 'node:zlib'
import { Registry, type Metric, type OpenMetricsContentType } from 'prom-client'

const gzip = promisify(gzipCallback)

/** What GET /metrics sends: the body, its media type and, when compressed, its encoding. */
export interface Exposition {
  body: string | Buffer
  contentType: string
  encoding?: 'gzip'
}

/** The client's preferences for one header (`Accept`, `Accept-Encoding`): each value with its weight `q`. */
export function weights (header: string | undefined): Map<string, number> {
  const out = new Map<string, number>()
  for (const part of (header ?? '').split(',')) {
    const [value = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase())
    if (value === '') continue
    const q = params.find((p) => p.startsWith('q='))
    const weight = q === undefined ? 1 : Number(q.slice(2))
    // The best weight wins when a value is listed twice (OpenMetrics 1.0.0 and 0.0.1, as Prometheus asks).
    if (Number.isFinite(weight)) out.set(value, Math.max(out.get(value) ?? 0, weight))
  }
  return out
}

/** OpenMetrics when the client asks for it at least as much as for the Prometheus text format. */
export function wantsOpenMetrics (accept: string | undefined): boolean {
  const w = weights(accept)
  const open = w.get('application/openmetrics-text') ?? 0
  return open > 0 && open >= Math.max(w.get('text/plain') ?? 0, w.get('text/*') ?? 0, w.get('*/*') ?? 0)
}

export function acceptsGzip (acceptEncoding: string | undefined): boolean {
  const w = weights(acceptEncoding)
  return (w.get('gzip') ?? w.get('*') ?? 0) > 0
}

/**
 * The registry's metrics in the format the client asked for, gzipped when
 * it accepts that. OpenMetrics is rendered by a second registry over the
 * same metric objects: prom-client's own OpenMetrics path renames counters
 * in place (drops `_total` from the metric object), which would change the
 * Prometheus text served next; here each counter is read through a copy
 * that carries the family name, and the metric objects stay as they are.
 */
export async function exposition (registry: Registry, accept: string | undefined, acceptEncoding: string | undefined): Promise<Exposition> {
  const openMetrics = wantsOpenMetrics(accept)
  const text = openMetrics ? await openMetricsText(registry) : await registry.metrics()
  const contentType = openMetrics ? Registry.OPENMETRICS_CONTENT_TYPE : registry.contentType
  if (!acceptsGzip(acceptEncoding)) return { body: text, contentType }
  return { body: await gzip(text), contentType, encoding: 'gzip' }
}

/** What the registry reads of a metric to render it (prom-client's own metrics and FastCounter/FastHistogram alike). */
interface Family {
  name: string
  help: string
  type: string
  aggregator: string
  get: () => Promise<{ name: string }>
}

async function openMetricsText (registry: Registry): Promise<string> {
  const view = new Registry<OpenMetricsContentType>()
  view.setContentType(Registry.OPENMETRICS_CONTENT_TYPE)
  for (const metric of registry.getMetricsAsArray() as unknown as Family[]) view.registerMetric(familyView(metric) as unknown as Metric)
  return await view.metrics()
}

/**
 * A counter as OpenMetrics names it, on a copy: the family without `_total`
 * (the registry adds it back to each sample). Other metrics are themselves.
 */
function familyView (metric: Family): Family {
  if (metric.type !== 'counter') return metric
  const family = metric.name.replace(/_total$/, '')
  return { name: family, help: metric.help, type: metric.type, aggregator: metric.aggregator, get: async () => ({ ...(await metric.get()), name: family }) }
}
