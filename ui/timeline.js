// A batch's timeline: one row per call in source order, a bar from each
// call's start for its duration, its epochs shaded, blocked calls pointing
// at the write that blocked them. layout() is pure; render() draws it as SVG.

const REPEAT_REASONS = new Set(['exact_repeat', 'repeat_cycle', 'consecutive_errors', 'no_progress'])
export const STATUSES = ['ok', 'error', 'rejected', 'uncertain', 'blocked', 'cancelled', 'terminated', 'denied', 'projection_failed']

/** Rows, epochs and arrows of a batch answer, on a time axis in milliseconds from the first start. */
export function layout (answer) {
  const results = answer.results ?? []
  const timed = (r) => typeof r.details?.startedAt === 'string' && typeof r.details?.durationMs === 'number'
  const starts = results.filter(timed).map((r) => Date.parse(r.details.startedAt))
  const t0 = starts.length === 0 ? 0 : Math.min(...starts)
  const rows = results.map((r, index) => {
    const d = r.details ?? {}
    const row = { index, callId: r.callId, name: r.name, status: r.status, epoch: d.epoch ?? null, reason: d.reason ?? d.cause ?? null, blockedBy: d.blockedBy ?? null, conflictKey: d.conflictKey ?? null, waited: d.waited ?? null, start: null, end: null, repeat: null }
    if (timed(r)) {
      row.start = Date.parse(d.startedAt) - t0
      row.end = row.start + d.durationMs
    }
    if (r.status === 'terminated' && REPEAT_REASONS.has(d.reason)) row.repeat = 'terminated'
    return row
  })
  const byId = new Map(rows.map((row) => [row.callId, row]))
  // Under the lifecycle audience the host sees which call a repeat was detected on.
  for (const e of answer.events ?? []) {
    if (e.type !== 'tool.repeat_detected' || e.callId === undefined) continue
    const row = byId.get(e.callId)
    if (row !== undefined && row.repeat === null) row.repeat = e.action === 'terminated' ? 'terminated' : 'advisory'
  }
  settleEpochStarts(rows)
  const epochs = new Map()
  for (const row of rows) {
    if (row.epoch === null || row.start === null) continue
    const e = epochs.get(row.epoch) ?? { epoch: row.epoch, start: row.start, end: row.end }
    e.start = Math.min(e.start, row.start)
    e.end = Math.max(e.end, row.end)
    epochs.set(row.epoch, e)
  }
  const span = Math.max(1, ...rows.map((r) => r.end ?? 0))
  // A call with no timing is drawn as a mark: a blocked one where its blocker ended, others where their epoch began.
  for (const row of rows) {
    if (row.start !== null) continue
    const blocker = row.blockedBy === null ? undefined : byId.get(row.blockedBy)
    row.at = blocker?.end ?? epochs.get(row.epoch)?.start ?? 0
  }
  // An epoch that holds only untimed calls (say, one blocked call) still gets its band and label.
  for (const row of rows) {
    if (row.start !== null || row.epoch === null || epochs.has(row.epoch)) continue
    epochs.set(row.epoch, { epoch: row.epoch, start: row.at, end: row.at })
  }
  const arrows = rows
    .filter((row) => row.status === 'blocked' && row.blockedBy !== null && byId.has(row.blockedBy))
    .map((row) => ({ from: byId.get(row.blockedBy), to: row }))
  return { rows, epochs: [...epochs.values()].sort((a, b) => a.epoch - b.epoch), arrows, span }
}

/**
 * A call's start is told in whole milliseconds (`startedAt`) and its duration
 * in tenths, so a call can read as starting up to 1 ms before the epoch
 * before it ended, which it cannot have: an epoch starts once the one before
 * it settled. Such a call is drawn from that end, with its own duration. A
 * gap of 1 ms or more is drawn as it was told.
 */
function settleEpochStarts (rows) {
  const timed = rows.filter((row) => row.epoch !== null && row.start !== null).sort((a, b) => a.epoch - b.epoch)
  let before = -Infinity
  for (let i = 0; i < timed.length;) {
    const epoch = timed[i].epoch
    let end = -Infinity
    for (; i < timed.length && timed[i].epoch === epoch; i++) {
      const row = timed[i]
      if (row.start < before && before - row.start < 1) {
        row.end += before - row.start
        row.start = before
      }
      end = Math.max(end, row.end)
    }
    before = end
  }
}

const SVG = 'http://www.w3.org/2000/svg'
const LABEL = 260
/** Room left of time zero, so a mark drawn there is not cut by the labels. */
const PAD = 14
/** The column on the right where repeat marks go, clear of every epoch. */
const REPEATS = 100
const ROW = 30
const AXIS = 46
/** Room one epoch label takes ("epoch 12" at 13 px, and a gap). */
const EPOCH_LABEL = 70
/** The narrowest time axis drawn; a wider page gets a wider one. */
const MIN_CHART = 280

function el (name, attrs = {}, text) {
  const node = document.createElementNS(SVG, name)
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v))
  if (text !== undefined) node.textContent = text
  return node
}

const ms = (v) => (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)) + ' ms'

/** The timeline of a batch answer as an SVG element. */
export function render (answer, { width = 990 } = {}) {
  const { rows, epochs, arrows, span } = layout(answer)
  const CHART = Math.max(MIN_CHART, Math.floor(width) - LABEL - PAD - REPEATS - 12)
  const total = LABEL + PAD + CHART + REPEATS + 12
  const x = (t) => LABEL + PAD + (t / span) * CHART
  // A blocked call's mark sits a little after its blocker's end, so the arrow between them can be seen.
  const markX = (row) => x(row.at) + (row.status === 'blocked' && row.blockedBy !== null ? 30 : 0)
  const y = (i) => AXIS + i * ROW
  const height = AXIS + rows.length * ROW + 22
  const svg = el('svg', { class: 'timeline', width: total, height, viewBox: `0 0 ${total} ${height}`, role: 'img', 'aria-label': `Timeline of batch ${answer.batchId}` })
  const defs = el('defs')
  const head = el('marker', { id: 'arrowhead', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' })
  head.append(el('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' }))
  defs.append(head)
  svg.append(defs)

  // Labels on two lines: epochs that start at nearly the same time (one of only a blocked call, then the next) keep theirs apart.
  const lineFree = [-Infinity, -Infinity]
  for (const e of epochs) {
    const g = el('g', { class: `epoch epoch-${e.epoch % 2}`, 'data-epoch': e.epoch })
    g.append(el('rect', { x: x(e.start), y: AXIS - 6, width: Math.max(2, x(e.end) - x(e.start)), height: rows.length * ROW + 6 }))
    const want = x(e.start) + 3
    const line = lineFree[0] <= want ? 0 : lineFree[1] <= want ? 1 : lineFree[0] <= lineFree[1] ? 0 : 1
    const labelX = Math.max(want, lineFree[line])
    lineFree[line] = labelX + EPOCH_LABEL
    g.append(el('text', { x: labelX, y: line === 0 ? 16 : AXIS - 10, class: 'epoch-label' }, `epoch ${e.epoch}`))
    svg.append(g)
  }
  const bottom = AXIS + rows.length * ROW + 14
  svg.append(el('text', { x: x(0), y: bottom, class: 'axis' }, '0 ms'))
  svg.append(el('text', { x: x(span), y: bottom, class: 'axis', 'text-anchor': 'end' }, ms(span)))

  for (const row of rows) {
    const top = y(row.index)
    const g = el('g', { class: `row status-${row.status}`, 'data-call': row.callId, 'data-status': row.status })
    g.append(el('text', { x: 6, y: top + ROW / 2 + 5, class: 'label' }, `${row.index + 1}. ${row.callId} · ${row.name}`))
    g.append(el('text', { x: LABEL - 8, y: top + ROW / 2 + 5, class: 'status-label', 'text-anchor': 'end' }, row.status))
    let shape
    if (row.start !== null) {
      shape = el('rect', { class: 'bar', x: x(row.start), y: top + 5, width: Math.max(2, x(row.end) - x(row.start)), height: ROW - 10, rx: 3, 'data-start': row.start, 'data-duration': row.end - row.start })
    } else {
      const cx = markX(row)
      shape = el('path', { class: 'mark', d: `M ${cx} ${top + 5} l 7 ${(ROW - 10) / 2} l -7 ${(ROW - 10) / 2} l -7 ${-(ROW - 10) / 2} z` })
    }
    const tip = [`${row.callId} (${row.name}): ${row.status}`]
    if (row.start !== null) tip.push(`start +${ms(row.start)}, ${ms(row.end - row.start)}`)
    if (row.epoch !== null) tip.push(`epoch ${row.epoch}`)
    if (row.reason !== null) tip.push(`reason ${row.reason}`)
    if (row.blockedBy !== null) tip.push(`blocked by ${row.blockedBy}`)
    if (row.conflictKey !== null) tip.push(`conflict key ${row.conflictKey}`)
    if (row.waited !== null) tip.push(row.waited.for === 'conflict_key' ? `waited for ${row.waited.callId} to free the key` : `waited for ${row.waited.for === 'slot' ? 'a free slot' : row.waited.for}`)
    shape.append(el('title', {}, tip.join('\n')))
    g.append(shape)
    if (row.repeat !== null) {
      g.append(el('text', { x: total - REPEATS, y: top + ROW / 2 + 5, class: `repeat-mark repeat-${row.repeat}`, 'data-action': row.repeat }, row.repeat === 'terminated' ? '⛔ repeat' : '↻ repeat'))
    }
    svg.append(g)
  }

  for (const { from, to } of arrows) {
    const x1 = x(from.end ?? from.at ?? 0)
    const y1 = y(from.index) + ROW / 2
    const x2 = markX(to) - 8
    const y2 = y(to.index) + ROW / 2
    svg.append(el('path', { class: 'blocker-arrow', 'data-from': from.callId, 'data-to': to.callId, d: `M ${x1 + 1} ${y1} C ${x1 + 12} ${y1}, ${x1 + 4} ${y2}, ${x2} ${y2}`, 'marker-end': 'url(#arrowhead)' }))
  }
  return svg
}
