import { MAX_POLICY_MESSAGE_CHARS, boundedName } from './tracker.js'

/** Tool names past this many code points are cut: an unknown tool's name is whatever the model wrote. */
const MAX_TOOL_NAME = 128

/**
 * Renders a message from tool names, cutting the names (never the
 * sentence) so the whole stays within 512 characters, whatever the names.
 */
function bounded (names: readonly string[], render: (quoted: string[]) => string): string {
  const fixed = render(names.map(() => '')).length
  const each = Math.max(1, Math.min(MAX_TOOL_NAME, Math.floor((MAX_POLICY_MESSAGE_CHARS - fixed) / Math.max(1, names.length))))
  return render(names.map((name) => boundedName(name, each)))
}

function positive (count: number): void {
  if (!Number.isInteger(count) || count < 1) throw new TypeError(`Expected \`count\` to be a positive integer, got ${String(count)}`)
}

/** The advisory of a cycle: the tools of one repetition in order and how many repetitions, never the arguments. */
export function cycleMessage (tools: readonly string[], repetitions: number): string {
  positive(repetitions)
  return bounded(tools, (names) =>
    `Loop detected (cycle): you have repeated the same sequence of ${tools.length} tool calls (${names.map((n) => `"${n}"`).join(' → ')}) ` +
    `${repetitions} times in a row, each time with identical arguments. Going round again will not give a different result. ` +
    'Change your approach (different arguments or a different tool) or stop and tell the user what is blocking you.')
}

/** The advisory of an error streak: the failing tools and how many calls failed in a row. */
export function errorsMessage (tools: readonly string[], count: number): string {
  positive(count)
  return bounded(tools, (names) =>
    `Loop detected (errors): your last ${count} tool calls in a row failed (${names.map((n) => `"${n}"`).join(', ')}). ` +
    'Read the error messages and fix their cause instead of retrying variations of the same call, ' +
    'or stop and tell the user what is blocking you.')
}

/** The advisory of polling that makes no progress: the tool and how many identical answers. */
export function noProgressMessage (tool: string, count: number): string {
  positive(count)
  return bounded([tool], ([name]) =>
    `Loop detected (no_progress): you have called the tool "${name}" ${count} times in a row with the same arguments ` +
    'and it returned the same result every time. Nothing is changing: stop polling, try something else, ' +
    'or tell the user what you are waiting for.')
}
