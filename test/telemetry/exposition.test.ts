import { gunzipSync } from 'node:zlib'
import t from 'tap'
import { request } from 'undici'
import { acceptsGzip, wantsOpenMetrics } from '../../src/telemetry/exposition.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { parse } from './scrape.js'

/** What Prometheus 2.x sends when it scrapes. */
const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

t.test('the format is chosen by the weights of Accept, and gzip by Accept-Encoding', async (t) => {
  const formats: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ['*/*', false],
    ['text/plain', false],
    ['application/openmetrics-text', true],
    [PROMETHEUS_ACCEPT, true],
    ['Application/OpenMetrics-Text; version=1.0.0', true],
    ['application/openmetrics-text;q=0.4, text/plain', false],
    ['application/openmetrics-text;q=0, */*', false],
    ['text/plain;q=0.5, application/openmetrics-text;q=0.5', true]
  ]
  for (const [accept, open] of formats) t.equal(wantsOpenMetrics(accept), open, `Accept: ${accept}`)
  const encodings: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ['identity', false],
    ['gzip', true],
    ['gzip, deflate, br', true],
    ['br;q=1, gzip;q=0.5', true],
    ['gzip;q=0', false],
    ['*', true],
    ['*, gzip;q=0', false]
  ]
  for (const [encoding, gzip] of encodings) t.equal(acceptsGzip(encoding), gzip, `Accept-Encoding: ${encoding}`)
})

t.test('GET /metrics answers Prometheus text, OpenMetrics or gzip of either as a real client asks', async (t) => {
  const ex = await startExecutor(t)
  ex.on('look', () => ({ content: 'grass' }))
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  await post(app, '/v1/runs', { runId: 'r1' })
  await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: { secret: 'do-not-export' } }] })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })

  async function scrape (headers: Record<string, string>): Promise<{ type: string, encoding: unknown, vary: unknown, text: string }> {
    const res = await request(`${base}/metrics`, { headers })
    t.equal(res.statusCode, 200)
    const raw = Buffer.from(await res.body.arrayBuffer())
    const encoding = res.headers['content-encoding']
    return { type: String(res.headers['content-type']), encoding, vary: res.headers.vary, text: (encoding === 'gzip' ? gunzipSync(raw) : raw).toString('utf8') }
  }

  const plain = await scrape({})
  t.equal(plain.type, 'text/plain; version=0.0.4; charset=utf-8', 'Prometheus text without an Accept')
  t.equal(plain.encoding, undefined, 'not compressed unless asked')
  t.equal(plain.vary, 'Accept, Accept-Encoding', 'caches keep the formats apart')
  t.match(plain.text, /^# TYPE toolgate_batches_total counter$/m)
  t.ok(parse(plain.text).some((s) => s.name === 'toolgate_tool_calls_total' && s.labels.tool === 'look' && s.labels.status === 'ok' && s.value === 1))

  const zipped = await scrape({ 'accept-encoding': 'gzip' })
  t.equal(zipped.encoding, 'gzip')
  t.equal(zipped.type, plain.type)
  const types = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('# TYPE '))
  t.strictSame(types(zipped.text), types(plain.text), 'the gzipped body is the same exposition')

  const open = await scrape({ accept: PROMETHEUS_ACCEPT, 'accept-encoding': 'gzip' })
  t.equal(open.type, 'application/openmetrics-text; version=1.0.0; charset=utf-8', 'OpenMetrics when asked for, as Prometheus does')
  t.equal(open.encoding, 'gzip')
  t.ok(open.text.endsWith('\n# EOF\n'), 'the OpenMetrics body ends with # EOF')
  t.match(open.text, /^# TYPE toolgate_batches counter$/m, 'a counter family is named without _total')
  t.match(open.text, /^toolgate_tool_calls_total\{tool="look",status="ok"\} 1$/m, 'its samples keep _total')
  t.match(open.text, /^# TYPE toolgate_tool_call_duration_seconds histogram$/m)
  t.match(open.text, /^toolgate_tool_call_duration_seconds_count\{tool="look"\} 1$/m)
  t.notMatch(open.text, /_total_total/, 'no sample is named twice over')
  t.notMatch(open.text, /\n\n/, 'OpenMetrics has no blank lines')
  t.notMatch(open.text + plain.text, /do-not-export/, 'arguments are in neither format')

  const after = await scrape({ accept: 'text/plain' })
  t.strictSame(types(after.text), types(plain.text), 'an OpenMetrics scrape leaves the Prometheus text as it was')
})
