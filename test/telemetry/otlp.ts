/**
 * What an OTLP/HTTP traces export carries, decoded from either encoding:
 * http/json as the OTLP JSON mapping writes it, http/protobuf from the wire
 * format with the field numbers of opentelemetry/proto/trace/v1/trace.proto
 * (the exporter packages serialize by hand and ship no decoder).
 */
export interface ExportedSpan {
  scope: string
  name: string
  kind: number
  traceId: string
  spanId: string
  parentSpanId: string
  attributes: Record<string, unknown>
  events: Array<{ name: string, attributes: Record<string, unknown> }>
  status: number
}

export interface Export { resource: Record<string, unknown>, spans: ExportedSpan[] }

type Fields = Map<number, Array<Buffer | bigint>>

/** The fields of one protobuf message: varints as bigint, fixed and length-delimited ones as bytes. */
function fields (buf: Buffer): Fields {
  const out: Fields = new Map()
  let i = 0
  const varint = (): bigint => {
    let v = 0n
    let shift = 0n
    for (;;) {
      const b = buf[i++]!
      v |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) return v
      shift += 7n
    }
  }
  while (i < buf.length) {
    const key = Number(varint())
    const [field, wire] = [key >> 3, key & 7]
    let value: Buffer | bigint
    if (wire === 0) value = varint()
    else if (wire === 1) { value = buf.subarray(i, i + 8); i += 8 } else if (wire === 5) { value = buf.subarray(i, i + 4); i += 4 } else if (wire === 2) {
      const len = Number(varint())
      value = buf.subarray(i, i + len)
      i += len
    } else throw new Error(`unexpected wire type ${wire}`)
    const list = out.get(field) ?? []
    list.push(value)
    out.set(field, list)
  }
  return out
}

const bytes = (f: Fields, n: number): Buffer[] => (f.get(n) ?? []) as Buffer[]
const text = (f: Fields, n: number): string => bytes(f, n)[0]?.toString('utf8') ?? ''
const num = (f: Fields, n: number): number => Number((f.get(n)?.[0] as bigint | undefined) ?? 0n)

/** AnyValue: string 1, bool 2, int 3, double 4. */
function anyValue (buf: Buffer): unknown {
  const f = fields(buf)
  if (f.has(1)) return text(f, 1)
  if (f.has(2)) return num(f, 2) === 1
  if (f.has(3)) return num(f, 3)
  if (f.has(4)) return (f.get(4)![0] as Buffer).readDoubleLE(0)
  return undefined
}

/** Repeated KeyValue (key 1, value 2). */
function keyValues (list: Buffer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const kv of list) {
    const f = fields(kv)
    out[text(f, 1)] = anyValue(bytes(f, 2)[0] ?? Buffer.alloc(0))
  }
  return out
}

/** ExportTraceServiceRequest: resource_spans 1 { resource 1 { attributes 1 }, scope_spans 2 { scope 1 { name 1 }, spans 2 } }. */
export function decodeProtobuf (body: Buffer): Export[] {
  return bytes(fields(body), 1).map((rs) => {
    const r = fields(rs)
    const resource = keyValues(bytes(fields(bytes(r, 1)[0] ?? Buffer.alloc(0)), 1))
    const spans = bytes(r, 2).flatMap((ss) => {
      const s = fields(ss)
      const scope = text(fields(bytes(s, 1)[0] ?? Buffer.alloc(0)), 1)
      // Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, attributes 9, events 11 { name 2, attributes 3 }, status 15 { code 3 }.
      return bytes(s, 2).map((sp): ExportedSpan => {
        const f = fields(sp)
        return {
          scope,
          name: text(f, 5),
          kind: num(f, 6),
          traceId: bytes(f, 1)[0]?.toString('hex') ?? '',
          spanId: bytes(f, 2)[0]?.toString('hex') ?? '',
          parentSpanId: bytes(f, 4)[0]?.toString('hex') ?? '',
          attributes: keyValues(bytes(f, 9)),
          events: bytes(f, 11).map((e) => { const ef = fields(e); return { name: text(ef, 2), attributes: keyValues(bytes(ef, 3)) } }),
          status: num(fields(bytes(f, 15)[0] ?? Buffer.alloc(0)), 3)
        }
      })
    })
    return { resource, spans }
  })
}

interface JsonKeyValue { key: string, value: { stringValue?: string, boolValue?: boolean, intValue?: number | string, doubleValue?: number } }
interface JsonSpan {
  name: string, kind: number, traceId: string, spanId: string, parentSpanId?: string, attributes?: JsonKeyValue[],
  events?: Array<{ name: string, attributes?: JsonKeyValue[] }>, status?: { code?: number }
}
interface JsonExport { resourceSpans: Array<{ resource: { attributes: JsonKeyValue[] }, scopeSpans: Array<{ scope: { name: string }, spans: JsonSpan[] }> }> }

function jsonValues (list: JsonKeyValue[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const { key, value } of list) {
    out[key] = value.stringValue ?? value.boolValue ?? (value.intValue === undefined ? value.doubleValue : Number(value.intValue))
  }
  return out
}

/** The OTLP JSON mapping: ids in hex, enums as numbers. */
export function decodeJson (body: Buffer): Export[] {
  const doc = JSON.parse(body.toString('utf8')) as JsonExport
  return doc.resourceSpans.map((rs) => ({
    resource: jsonValues(rs.resource.attributes),
    spans: rs.scopeSpans.flatMap((ss) => ss.spans.map((sp): ExportedSpan => ({
      scope: ss.scope.name,
      name: sp.name,
      kind: sp.kind,
      traceId: sp.traceId,
      spanId: sp.spanId,
      parentSpanId: sp.parentSpanId ?? '',
      attributes: jsonValues(sp.attributes),
      events: (sp.events ?? []).map((e) => ({ name: e.name, attributes: jsonValues(e.attributes) })),
      status: sp.status?.code ?? 0
    })))
  }))
}
