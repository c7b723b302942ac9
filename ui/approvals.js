// The approvals inbox: every call of the tenant waiting for a person's decision.
// The only place the page shows arguments: the approver decides on them.
import { ApiError, api, enc } from './api.js'
import { badge, h, time } from './dom.js'

export async function inbox (view) {
  view.append(h('h1', {}, 'Approvals'))
  const { data } = await api('/v1/approvals')
  const pending = Array.isArray(data) ? data : (data?.approvals ?? [])
  if (pending.length === 0) {
    view.append(h('p', { class: 'empty' }, 'Nothing is waiting for a decision.'))
    return
  }
  for (const item of pending) view.append(card(item))
}

function card (item) {
  const original = JSON.stringify(item.arguments ?? {}, null, 2)
  const args = h('textarea', { class: 'arguments', rows: Math.min(16, original.split('\n').length + 1), spellcheck: 'false', 'aria-label': `arguments of ${item.callId}` })
  args.value = original
  const reason = h('input', { type: 'text', class: 'reason', placeholder: 'why not (shown to the model)', maxlength: 500, 'aria-label': `reason to deny ${item.callId}` })
  const outcome = h('p', { class: 'outcome', role: 'status' })
  const buttons = []
  const decide = async (decision) => {
    for (const b of buttons) b.disabled = true
    try {
      const { status, data } = await api(`/v1/runs/${enc(item.runId)}/batches/${enc(item.batchId)}/approvals`, { method: 'POST', body: { decisions: [{ callId: item.callId, ...decision }] } })
      const link = h('a', { href: `#/runs/${enc(item.runId)}/batches/${enc(item.batchId)}` }, 'open the batch')
      outcome.replaceChildren(status === 200 ? 'Decided; the batch completed: ' : 'Decided; other calls of the batch still wait: ', link)
      node.classList.add('decided')
      node.dataset.outcome = status === 200 ? (data?.state ?? 'completed') : 'waiting'
    } catch (err) {
      outcome.textContent = err instanceof ApiError ? `${err.code}: ${err.message}` : String(err)
      for (const b of buttons) b.disabled = false
    }
  }
  const approve = h('button', { type: 'button', class: 'approve' }, 'Approve')
  approve.onclick = () => {
    if (args.value === original) return decide({ approve: true })
    let edited
    try {
      edited = JSON.parse(args.value)
    } catch {
      outcome.textContent = 'The edited arguments are not valid JSON.'
      return
    }
    return decide({ approve: true, arguments: edited })
  }
  const deny = h('button', { type: 'button', class: 'deny' }, 'Deny')
  deny.onclick = () => decide({ approve: false, ...(reason.value.trim() === '' ? {} : { reason: reason.value.trim() }) })
  buttons.push(approve, deny)
  const node = h('article', { class: 'approval', 'data-run': item.runId, 'data-batch': item.batchId, 'data-call': item.callId },
    h('h2', {}, `${item.tool} `, h('span', { class: 'muted' }, `${item.callId} · run ${item.runId} · batch ${item.batchId}`)),
    item.context?.description ? h('p', { class: 'description' }, item.context.description) : '',
    h('p', { class: 'muted' }, `requested ${time(item.requestedAt)}`, item.expiresAt ? `, expires ${time(item.expiresAt)}` : ''),
    context(item),
    h('label', {}, 'Arguments (edit to approve with changes)', args),
    h('div', { class: 'actions' }, approve, reason, deny),
    outcome)
  return node
}

/** What surrounds the call: the batch's other calls and the run's latest calls before it (names and statuses only). */
function context (item) {
  const c = item.context
  if (c === undefined) return ''
  const entry = (x) => [h('span', { class: 'call-id' }, x.callId), ' ', h('span', { class: 'tool' }, x.tool), ' ', badge(x.status)]
  return h('div', { class: 'context' },
    h('section', { class: 'batch-calls', 'aria-label': `other calls of batch ${item.batchId}` },
      h('h3', {}, 'The batch\'s other calls'),
      c.batch.length === 0
        ? h('p', { class: 'empty' }, 'None: this call is the whole batch.')
        : h('ul', {}, c.batch.map((x) => h('li', { 'data-call': x.callId }, entry(x))))),
    h('section', { class: 'recent-calls', 'aria-label': `recent calls of run ${item.runId}` },
      h('h3', {}, 'The run\'s latest calls'),
      (c.recent ?? []).length === 0
        ? h('p', { class: 'empty' }, 'None: this is the run\'s first batch.')
        : h('ol', {}, c.recent.map((x) => h('li', { 'data-call': x.callId }, entry(x), h('span', { class: 'muted' }, ` · turn ${x.turn}`))))))
}
