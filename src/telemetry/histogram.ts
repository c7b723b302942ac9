import type { Metric, Registry } from 'prom-client'

/** One series: observations per bucket (not cumulative), the last slot for those above every bound. */
interface Series {
  labels: Record<string, string>
  counts: number[]
  sum: number
  count: number
}

/** One exported sample, as prom-client's registry reads it. */
interface Sample {
  labels: Record<string, string | number>
  value: number
  metricName: string
}

/** For the text format: the sample's own labels (`le`) apart from its series' (`sharedLabels`). */
interface TextSample extends Sample {
  sharedLabels: Record<string, string>
}

/** What the registry gets from a metric (prom-client's typings call `type` an enum; at run time it is this string). */
interface Exported<S extends Sample> {
  name: string
  help: string
  type: 'histogram'
  aggregator: 'sum'
  values: S[]
}

export interface FastHistogramConfig {
  name: string
  help: string
  buckets: readonly number[]
  /** The one label of its series, if any. */
  labelName?: string
  registers: Registry[]
}

/**
 * A Prometheus histogram of at most one label, for the batch path. It is
 * exported by prom-client's registry exactly as a prom-client Histogram with
 * the same name, buckets and observations is (a test holds the two
 * together), but observing is a Map lookup by the label value and a scan of
 * the bounds: prom-client hashes the label set and looks its bucket up by
 * the bound on every observation, which made metrics a visible share of a
 * batch's time in the engine (figures: docs/performance.md).
 */
export class FastHistogram {
  readonly name: string
  readonly help: string
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  readonly #bounds: readonly number[]
  readonly #labelName: string | null
  readonly #series = new Map<string, Series>()

  constructor (config: FastHistogramConfig) {
    this.name = config.name
    this.help = config.help
    this.#bounds = [...config.buckets].sort((a, b) => a - b)
    this.#labelName = config.labelName ?? null
    // The registry reads name, help, type and aggregator, and calls get, getForPromString and reset: all here.
    for (const registry of config.registers) registry.registerMetric(this as unknown as Metric)
    // As prom-client does: an unlabelled histogram shows its zero series from the start.
    if (this.#labelName === null) this.#seriesOf('')
  }

  /** Counts `value` in the series of `labelValue` (ignored when the histogram has no label). */
  observe (value: number, labelValue = ''): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`)
    const key = this.#labelName === null ? '' : labelValue
    const series = this.#series.get(key) ?? this.#seriesOf(key)
    const bounds = this.#bounds
    let i = 0
    while (i < bounds.length && value > bounds[i]!) i++
    series.counts[i]!++
    series.sum += value
    series.count++
  }

  /** What prom-client's registry writes as text. */
  async getForPromString (): Promise<Exported<TextSample>> {
    const values: TextSample[] = []
    const bucketName = `${this.name}_bucket`
    for (const s of this.#series.values()) {
      let cumulative = 0
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += s.counts[i]!
        values.push({ labels: { le: this.#bounds[i]! }, sharedLabels: s.labels, value: cumulative, metricName: bucketName })
      }
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucketName },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` }
      )
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  /** The registry's JSON form: every value with all its labels. */
  async get (): Promise<Exported<Sample>> {
    const data = await this.getForPromString()
    return { ...data, values: data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })) }
  }

  /** Forgets every series, the unlabelled one too, as prom-client's reset does. */
  reset (): void {
    this.#series.clear()
  }

  /** A new series; `key` is its label value, '' when the histogram has no label. */
  #seriesOf (key: string): Series {
    const series: Series = {
      labels: this.#labelName === null ? {} : { [this.#labelName]: key },
      counts: new Array<number>(this.#bounds.length + 1).fill(0),
      sum: 0,
      count: 0
    }
    this.#series.set(key, series)
    return series
  }
}
