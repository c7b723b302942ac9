/** Reading a test app's /metrics: samples of the Prometheus text format, summed by name and labels. */
import type { FastifyInstance } from 'fastify'
import { get } from '../helper.js'

export interface Sample { name: string, labels: Record<string, string>, value: number }

/** Parses Prometheus text format into samples (enough for prom-client's output). */
export function parse (text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (m === null) throw new Error(`unparsable metrics line: ${line}`)
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!
    samples.push({ name: m[1]!, labels, value: Number(m[3]) })
  }
  return samples
}

/** `value` sums the series of `name` whose labels include `labels`. */
export async function scrape (app: FastifyInstance): Promise<{ text: string, samples: Sample[], value: (name: string, labels?: Record<string, string>) => number, has: (name: string, labels?: Record<string, string>) => boolean }> {
  const res = await get(app, '/metrics')
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`)
  const text = String(res.body)
  const samples = parse(text)
  const matching = (name: string, labels: Record<string, string>): Sample[] => samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  return {
    text,
    samples,
    value: (name, labels = {}) => matching(name, labels).reduce((sum, s) => sum + s.value, 0),
    has: (name, labels = {}) => matching(name, labels).length > 0
  }
}

