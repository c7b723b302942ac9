import { MAX_POLICY_MESSAGE_CHARS, boundedName } from './tracker.js'

/** Tool names past this many code points are cut: an unknown tool's name is whatever the model wrote. */
const MAX_TOOL_NAME = 128

/**
 * Renders a loop kind's advisory from tool names and a positive count,
 * cutting the names (never the sentence) so the whole stays within 512
 * characters, whatever the names.
 */
export function boundedMessage (names: readonly string[], count: number, render: (quoted: string[]) => string): string {
  if (!Number.isInteger(count) || count < 1) throw new TypeError(`Expected \`count\` to be a positive integer, got ${String(count)}`)
  const fixed = render(names.map(() => '')).length
  const each = Math.max(1, Math.min(MAX_TOOL_NAME, Math.floor((MAX_POLICY_MESSAGE_CHARS - fixed) / Math.max(1, names.length))))
  return render(names.map((name) => boundedName(name, each)))
}
