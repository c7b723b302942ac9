import { isIP } from 'node:net'

/** What decides whether the service may run open (without keys). */
export interface OpenModeInput {
  /** No keys file: every caller is one tenant with every role. */
  open: boolean
  /** TOOLGATE_TOOLS_FILE is set: the tools are real, not the bundled demo. */
  realTools: boolean
  host: string
  /** TOOLGATE_ALLOW_OPEN. */
  allowOpen: boolean
}

/** Whether an address only this machine can reach. */
export function isLoopback (host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '')
  if (h === 'localhost' || h.endsWith('.localhost')) return true
  if (isIP(h) === 4) return h.startsWith('127.')
  if (h === '::1') return true
  // An IPv4-mapped IPv6 loopback (::ffff:127.0.0.1).
  return /^::ffff:127\./.test(h)
}

/**
 * Why the service must not start, or null. Open mode is for the bundled demo
 * and for a service only this machine can reach: with real tools on an
 * address others can reach, anyone could run them, so it takes an explicit
 * TOOLGATE_ALLOW_OPEN=true (a service behind a gateway that authenticates).
 */
export function openModeRefusal (input: OpenModeInput): string | null {
  if (!input.open || !input.realTools || input.allowOpen || isLoopback(input.host)) return null
  return `TOOLGATE_TOOLS_FILE is set but TOOLGATE_API_KEYS_FILE is not, and HOST ${input.host} is reachable from other machines: ` +
    'anyone could run the tools. Give a keys file, listen on a loopback HOST (127.0.0.1), or set TOOLGATE_ALLOW_OPEN=true if a gateway in front authenticates.'
}

/** Where open mode listens when HOST is unset: only this machine can reach a service without keys. */
export const OPEN_DEFAULT_HOST = '127.0.0.1'
/** Where a service with keys listens when HOST is unset. */
export const KEYED_DEFAULT_HOST = '0.0.0.0'

/** The address to listen on: HOST when set, else loopback while open and every address with keys. */
export function listenHost (host: string | null, open: boolean): string {
  return host ?? (open ? OPEN_DEFAULT_HOST : KEYED_DEFAULT_HOST)
}
