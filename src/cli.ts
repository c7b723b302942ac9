/**
 * The process's command line: `--help` and `--version` print and exit; any
 * other argument is refused, so a typo never starts a service.
 */
import { SETTINGS } from './config.js'

/** What the process does with its arguments. */
export type CliAction =
  | { kind: 'serve' }
  | { kind: 'print', text: string, exitCode: 0 }
  | { kind: 'refuse', text: string, exitCode: 2 }

/** Decides from the arguments after the script (`process.argv.slice(2)`). */
export function cliAction (args: readonly string[], version: string): CliAction {
  if (args.length === 0) return { kind: 'serve' }
  const [first] = args
  if (args.length === 1 && (first === '--help' || first === '-h')) return { kind: 'print', text: usage(version), exitCode: 0 }
  if (args.length === 1 && (first === '--version' || first === '-v')) return { kind: 'print', text: `toolgate ${version}\n`, exitCode: 0 }
  return { kind: 'refuse', text: `toolgate takes no arguments but --help or --version, got ${args.map((a) => JSON.stringify(a)).join(' ')}\n(settings are environment variables: see --help)\n`, exitCode: 2 }
}

function usage (version: string): string {
  const width = Math.max(...Object.values(SETTINGS).map((s) => s.env.length))
  const lines = Object.values(SETTINGS).map((s) => {
    const shown = s.default === null ? 'unset' : String(s.default)
    return `  ${s.env.padEnd(width)}  ${s.help} (default: ${shown})`
  })
  return [
    `toolgate ${version}: a tool-execution service for LLM agents.`,
    '',
    'Usage: node dist/src/server.js [--help | --version]',
    '',
    'Settings are environment variables, read once at start:',
    ...lines,
    '',
    'Without TOOLGATE_TOOLS_FILE it serves the bundled example tools; without',
    'TOOLGATE_API_KEYS_FILE it runs open and, with HOST unset, listens on 127.0.0.1 only.',
    'docs/configuration.md has every setting; docs/README.md the rest.',
    ''
  ].join('\n')
}
