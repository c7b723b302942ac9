// A run's uncertain writes: writes that may have taken effect without toolgate
// learning the outcome. A person who checked resolves each by hand, or asks
// its executor's status endpoint again (recheck). Never shows arguments.
import { ApiError, api, enc } from './api.js'
import { h, time } from './dom.js'

/** The panel for one run; `onResolved` runs after a write was settled. */
export async function uncertainPanel (runId, onResolved) {
  const { data } = await api(`/v1/runs/${enc(runId)}/uncertain`)
  const writes = data?.uncertain ?? []
  const panel = h('section', { class: 'uncertain-panel', 'aria-label': 'uncertain writes' },
    h('h2', {}, `Uncertain writes (${writes.length})`))
  if (writes.length === 0) {
    panel.append(h('p', { class: 'empty' }, 'None: every write of this run has a known outcome.'))
    return panel
  }
  panel.append(h('p', { class: 'muted' }, 'Until each is resolved, the same call is not sent again (it is blocked). Check the real state, then say what happened.'))
  const body = h('tbody')
  for (const w of writes) body.append(row({ ...w, runId }, onResolved))
  panel.append(h('table', { class: 'uncertain' },
    h('thead', {}, h('tr', {}, ['call', 'tool', 'batch', 'conflict key', 'since', 'resolve'].map((c) => h('th', {}, c)))), body))
  return panel
}

function row (w, onResolved) {
  const outcome = h('span', { class: 'outcome', role: 'status' })
  const choice = h('select', { 'aria-label': `outcome of ${w.callId}` },
    ['committed', 'rejected', 'failed'].map((s) => h('option', { value: s }, s)))
  const buttons = []
  const send = async (body) => {
    for (const b of buttons) b.disabled = true
    try {
      const { data } = await api(`/v1/receipts/${enc(w.operationId)}/resolve`, { method: 'POST', body })
      if (data.resolved) {
        outcome.textContent = `resolved: ${data.status}`
        tr.dataset.resolved = data.status
        onResolved?.()
        return
      }
      outcome.textContent = `not resolved: the status endpoint says ${data.check ?? 'nothing'}${data.cause ? ` (${data.cause})` : ''}`
    } catch (err) {
      outcome.textContent = err instanceof ApiError ? `${err.code}: ${err.message}` : String(err)
    }
    for (const b of buttons) b.disabled = false
  }
  const resolve = h('button', { type: 'button', class: 'resolve' }, 'Resolve')
  resolve.onclick = () => send({ status: choice.value })
  const recheck = h('button', { type: 'button', class: 'recheck' }, 'Recheck')
  recheck.onclick = () => send({ recheck: true })
  buttons.push(resolve, recheck)
  const tr = h('tr', { 'data-operation': w.operationId, 'data-call': w.callId },
    h('td', {}, w.callId), h('td', {}, w.tool),
    h('td', {}, h('a', { href: `#/runs/${enc(w.runId)}/batches/${enc(w.batchId)}` }, w.batchId)),
    h('td', {}, w.conflictKey ?? ''), h('td', {}, time(w.since)),
    h('td', {}, h('div', { class: 'actions' }, choice, resolve, recheck, outcome)))
  return tr
}
