import type { Metric, Registry } from 'prom-client'

/** One exported sample, as prom-client's registry reads it. */
interface Sample {
  labels: Record<string, string>
  value: number
}

export interface FastCounterConfig<L extends string> {
  name: string
  help: string
  /** Its labels, in the order `inc` takes their values. */
  labelNames?: readonly L[]
  registers: Registry[]
  /** Called before each read (a scrape): to bring the series in step with what exists. */
  collect?: () => void
}

/** One series: its labels and its count. */
interface Series {
  labels: Record<string, string>
  value: number
}

/** Joins label values into one Map key; the separator cannot appear in a label value written by toolgate. */
const SEP = '\u0000'

/**
 * A Prometheus counter for the batch path: counting is a Map lookup by the
 * label values and an addition, read by prom-client's registry at scrape
 * time (prom-client's Counter hashes the label object on every update; see
 * docs/performance.md). It is exported as a prom-client Counter
 * with the same name, labels and counts is (a test holds the two together).
 *
 * A series exists from `zero` (or its first `inc`) on, so a rate or an
 * `increase()` over its first event has a sample before it: Prometheus sees
 * nothing of a series that appears with its first count.
 */
export class FastCounter<L extends string = never> {
  readonly name: string
  readonly help: string
  readonly type = 'counter'
  readonly aggregator = 'sum'
  readonly #labelNames: readonly L[]
  readonly #series = new Map<string, Series>()
  readonly #collect: (() => void) | undefined

  constructor (config: FastCounterConfig<L>) {
    this.name = config.name
    this.help = config.help
    this.#labelNames = config.labelNames ?? []
    this.#collect = config.collect
    for (const registry of config.registers) registry.registerMetric(this as unknown as Metric)
    if (this.#labelNames.length === 0) this.zero()
  }

  /** Adds `n` to the series of these label values (in `labelNames` order). */
  inc (values: readonly string[] = [], n = 1): void {
    const key = keyOf(values)
    const series = this.#series.get(key) ?? this.#seriesOf(key, values)
    series.value += n
  }

  /** Makes the series of these label values exist, at 0 when it is new. */
  zero (values: readonly string[] = []): void {
    const key = keyOf(values)
    if (!this.#series.has(key)) this.#seriesOf(key, values)
  }

  /** Drops the series still at 0 whose labels `drop` answers true for (a label set that no longer applies). */
  dropZeros (drop: (labels: Readonly<Record<L, string>>) => boolean): void {
    for (const [key, s] of this.#series) if (s.value === 0 && drop(s.labels as Record<L, string>)) this.#series.delete(key)
  }

  /** The count of one series, 0 when it does not exist. */
  valueOf (values: readonly string[] = []): number {
    return this.#series.get(keyOf(values))?.value ?? 0
  }

  /** What prom-client's registry reads, as text and as JSON. */
  async get (): Promise<{ name: string, help: string, type: 'counter', aggregator: 'sum', values: Sample[] }> {
    this.#collect?.()
    const values: Sample[] = []
    for (const s of this.#series.values()) values.push({ labels: s.labels, value: s.value })
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  /** Forgets every series, as prom-client's reset does; an unlabelled counter keeps its zero. */
  reset (): void {
    this.#series.clear()
    if (this.#labelNames.length === 0) this.zero()
  }

  #seriesOf (key: string, values: readonly string[]): Series {
    if (values.length !== this.#labelNames.length) throw new TypeError(`${this.name} takes ${this.#labelNames.length} label values, got ${values.length}`)
    const labels: Record<string, string> = {}
    for (let i = 0; i < values.length; i++) labels[this.#labelNames[i]!] = values[i]!
    const series: Series = { labels, value: 0 }
    this.#series.set(key, series)
    return series
  }
}

/** The Map key of a series: its label values joined (one or two labels, the usual case, without an array join). */
function keyOf (values: readonly string[]): string {
  switch (values.length) {
    case 0: return ''
    case 1: return values[0]!
    case 2: return values[0]! + SEP + values[1]!
    default: return values.join(SEP)
  }
}
