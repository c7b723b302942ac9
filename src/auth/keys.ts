import { Type } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { sha256 } from '../model/sha256.js'
import { readStructuredFile } from '../tools/load.js'

export type Role = 'orchestrator' | 'admin' | 'operator' | 'approver'
export const ROLES: readonly Role[] = ['orchestrator', 'admin', 'operator', 'approver']

/** Who is calling: resolved from the API key once per request. */
export interface Principal {
  tenant: string
  roles: ReadonlySet<Role>
  /** '*' holds every scope. */
  scopes: ReadonlySet<string>
  /** A short, non-secret id of the key, for rate limiting. */
  keyId: string
  /** The key's name from the keys file, for logs and audit lines; never the key. */
  name?: string
}

const KeyEntry = Type.Object({
  key: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, pattern: '^\\S+$' })),
  sha256: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{64}$' })),
  tenant: Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,128}$' }),
  /** Names the key in log and audit lines (the key itself never is). */
  name: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.:@-]{1,128}$' })),
  roles: Type.Array(Type.Union(ROLES.map((r) => Type.Literal(r))), { minItems: 1 }),
  scopes: Type.Optional(Type.Array(Type.String({ minLength: 1 })))
}, { additionalProperties: false })
const checkEntry = TypeCompiler.Compile(KeyEntry)

/** Plain keys shorter than this load, with a warning at start: they are easy to guess. */
export const SHORT_KEY_CHARS = 16

/** A keys file that cannot be used; `problems` names every thing wrong, each with its place. */
export class KeysFileError extends Error {
  readonly problems: string[]
  constructor (source: string, problems: string[]) {
    super(`${source}:\n- ${problems.join('\n- ')}`)
    this.name = 'KeysFileError'
    this.problems = problems
  }
}

/** Every problem of one entry: its shape, and what the shape cannot say. */
function entryProblems (entry: unknown, at: string): string[] {
  const problems: string[] = []
  // One line per place: a union of literals reports once per member otherwise.
  const seen = new Set<string>()
  for (const e of checkEntry.Errors(entry)) {
    if (seen.has(e.path)) continue
    seen.add(e.path)
    const message = /^\/roles\/\d+$/.test(e.path)
      ? `must be one of ${ROLES.join(', ')}`
      : e.path === '/key' && typeof e.value === 'string' && /\s/.test(e.value)
        ? 'must not hold spaces or other white space: it is sent as `Authorization: Bearer <key>` (`openssl rand -hex 32` makes a good one)'
        : e.message
    problems.push(`${at}${e.path}: ${message}`)
  }
  if (typeof entry === 'object' && entry !== null && !Array.isArray(entry)) {
    const { key, sha256: digest } = entry as { key?: unknown, sha256?: unknown }
    if ((key === undefined) === (digest === undefined)) problems.push(`${at}: give exactly one of "key" or "sha256"`)
  }
  return problems
}

const OPEN: Principal = Object.freeze({
  tenant: 'default',
  roles: new Set<Role>(ROLES),
  scopes: new Set(['*']),
  keyId: 'open'
})

/**
 * The API keys a process accepts. Keys are held only as SHA-256 digests
 * (hex); a presented key is hashed and its digest looked up.
 */
export class KeyRing {
  readonly #byDigest = new Map<string, Principal>()
  /** What is usable but unwise in the keys file, each at its place; never a key. */
  readonly warnings: string[] = []

  /** No keys: the service runs open, as one tenant with every role. */
  get open (): boolean {
    return this.#byDigest.size === 0
  }

  /** Builds the ring from a parsed keys file; throws KeysFileError listing every problem. */
  static fromDocument (doc: unknown, source = 'TOOLGATE_API_KEYS_FILE'): KeyRing {
    const entries = (doc as { keys?: unknown } | null)?.keys
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc) || !Array.isArray(entries)) {
      throw new KeysFileError(source, ['(file): expected an object with a "keys" array'])
    }
    const problems: string[] = []
    for (const name of Object.keys(doc)) if (name !== 'keys') problems.push(`/${name}: unknown member`)
    // A keys file that holds no key is a mistake, not a wish to run open: that is asked for by leaving the file unset.
    if (entries.length === 0) problems.push('/keys: holds no key; to run open, leave TOOLGATE_API_KEYS_FILE unset')
    const ring = new KeyRing()
    const firstSeen = new Map<string, number>()
    for (const [i, entry] of entries.entries()) {
      const found = entryProblems(entry, `/keys/${i}`)
      if (found.length > 0 || !checkEntry.Check(entry)) {
        problems.push(...found)
        continue
      }
      if (entry.key !== undefined && entry.key.length < SHORT_KEY_CHARS) {
        ring.warnings.push(`/keys/${i}/key: ${entry.key.length} characters is easy to guess; use at least ${SHORT_KEY_CHARS} random characters (32 or more is better)`)
      }
      const hex = entry.sha256?.toLowerCase() ?? sha256Hex(entry.key!)
      const first = firstSeen.get(hex)
      if (first !== undefined) {
        problems.push(`/keys/${i}: the same key as /keys/${first}`)
        continue
      }
      firstSeen.set(hex, i)
      ring.#byDigest.set(hex, Object.freeze({
        tenant: entry.tenant,
        roles: new Set(entry.roles),
        scopes: new Set(entry.scopes ?? []),
        keyId: hex.slice(0, 12),
        ...(entry.name === undefined ? {} : { name: entry.name })
      }))
    }
    if (problems.length > 0) throw new KeysFileError(source, problems)
    return ring
  }

  static async fromFile (path: string): Promise<KeyRing> {
    let doc: unknown
    try {
      doc = await readStructuredFile(path)
    } catch (err) {
      throw new KeysFileError(`TOOLGATE_API_KEYS_FILE ${path}`, [`(file): ${(err as Error).message}`])
    }
    return KeyRing.fromDocument(doc, `TOOLGATE_API_KEYS_FILE ${path}`)
  }

  /** The principal of an Authorization header, or null when it holds no valid key. */
  authenticate (authorization: string | undefined): Principal | null {
    if (this.open) return OPEN
    if (authorization === undefined) return null
    const match = /^Bearer[ ]+(\S{1,4096})\s*$/i.exec(authorization)
    if (match === null) return null
    // Looked up by the key's SHA-256: how long the lookup takes says nothing of the key itself.
    return this.#byDigest.get(sha256Hex(match[1]!)) ?? null
  }
}

export function sha256Hex (text: string): string {
  return sha256(text, 'hex')
}
