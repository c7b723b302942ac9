// Building the page from data: text always goes in as text, never as markup.

/** An HTML element with attributes and children (strings become text nodes). */
export function h (tag, attrs = {}, ...children) {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v)
    else node.setAttribute(k, v === true ? '' : String(v))
  }
  for (const child of children.flat()) if (child !== undefined && child !== null) node.append(child instanceof Node ? child : String(child))
  return node
}

export const time = (iso) => (iso ? new Date(iso).toLocaleString() : '')

export function badge (status, text = status) {
  return h('span', { class: `badge status-${status}` }, text)
}
