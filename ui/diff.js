// A word diff of two texts, for a person reading what changed in a tool's
// description: pure, no DOM. Longer texts than MAX_WORDS are not diffed
// word by word (the table would be large): the whole text is then changed.

const MAX_WORDS = 1500

/** Parts of the change in order: { op: 'same' | 'removed' | 'added', text }. */
export function wordDiff (before, after) {
  const a = tokens(before)
  const b = tokens(after)
  if (a.length > MAX_WORDS || b.length > MAX_WORDS) return merge([{ op: 'removed', text: before }, { op: 'added', text: after }])
  // Longest common subsequence of the words, from the end.
  const n = a.length
  const m = b.length
  const lcs = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1))
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1])
  }
  const parts = []
  let i = 0
  let j = 0
  while (i < n && j < m) {
    if (a[i] === b[j]) { parts.push({ op: 'same', text: a[i] }); i++; j++ } else if (lcs[i + 1][j] >= lcs[i][j + 1]) parts.push({ op: 'removed', text: a[i++] })
    else parts.push({ op: 'added', text: b[j++] })
  }
  while (i < n) parts.push({ op: 'removed', text: a[i++] })
  while (j < m) parts.push({ op: 'added', text: b[j++] })
  return merge(parts)
}

/** Words and the blanks between them, so joining the parts gives the text back. */
function tokens (text) {
  return String(text ?? '').match(/\S+|\s+/g) ?? []
}

function merge (parts) {
  const out = []
  for (const p of parts) {
    if (p.text === '') continue
    const last = out.at(-1)
    if (last !== undefined && last.op === p.op) last.text += p.text
    else out.push({ ...p })
  }
  return out
}
