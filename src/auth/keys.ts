import { createHash, timingSafeEqual } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { readStructuredFile } from '../tools/load.js'

export type Role = 'orchestrator' | 'admin' | 'operator'
export const ROLES: readonly Role[] = ['orchestrator', 'admin', 'operator']

/** Who is calling: resolved from the API key once per request. */
export interface Principal {
  tenant: string
  roles: ReadonlySet<Role>
  /** '*' holds every scope. */
  scopes: ReadonlySet<string>
  /** A short, non-secret id of the key, for rate limiting and logs. */
  keyId: string
}

const KeyEntry = Type.Object({
  key: Type.Optional(Type.String({ minLength: 16, maxLength: 4096 })),
  sha256: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{64}$' })),
  tenant: Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,128}$' }),
  roles: Type.Array(Type.Union(ROLES.map((r) => Type.Literal(r))), { minItems: 1 }),
  scopes: Type.Optional(Type.Array(Type.String({ minLength: 1 })))
}, { additionalProperties: false })
const KeysFile = Type.Object({ keys: Type.Array(KeyEntry) })
const checkKeysFile = TypeCompiler.Compile(KeysFile)

interface Stored { digest: Buffer, principal: Principal }

const OPEN: Principal = Object.freeze({
  tenant: 'default',
  roles: new Set<Role>(ROLES),
  scopes: new Set(['*']),
  keyId: 'open'
})

/**
 * The API keys a process accepts. Keys are held only as SHA-256 digests; a
 * presented key is hashed, looked up, and compared in constant time.
 */
export class KeyRing {
  readonly #byDigest = new Map<string, Stored>()

  /** No keys: the service runs open, as one tenant with every role. */
  get open (): boolean {
    return this.#byDigest.size === 0
  }

  static fromDocument (doc: unknown, source = 'TOOLGATE_API_KEYS_FILE'): KeyRing {
    if (!checkKeysFile.Check(doc)) {
      const problems = [...checkKeysFile.Errors(doc)].slice(0, 10).map((e) => `${e.path || '(file)'}: ${e.message}`)
      throw new Error(`${source}: ${problems.join('; ')}`)
    }
    const ring = new KeyRing()
    const problems: string[] = []
    for (const [i, entry] of doc.keys.entries()) {
      if ((entry.key === undefined) === (entry.sha256 === undefined)) {
        problems.push(`/keys/${i}: give exactly one of "key" or "sha256"`)
        continue
      }
      const hex = entry.sha256?.toLowerCase() ?? sha256Hex(entry.key!)
      if (ring.#byDigest.has(hex)) {
        problems.push(`/keys/${i}: the same key appears twice`)
        continue
      }
      ring.#byDigest.set(hex, {
        digest: Buffer.from(hex, 'hex'),
        principal: Object.freeze({
          tenant: entry.tenant,
          roles: new Set(entry.roles),
          scopes: new Set(entry.scopes ?? []),
          keyId: hex.slice(0, 12)
        })
      })
    }
    if (problems.length > 0) throw new Error(`${source}: ${problems.join('; ')}`)
    return ring
  }

  static async fromFile (path: string): Promise<KeyRing> {
    let doc: unknown
    try {
      doc = await readStructuredFile(path)
    } catch (err) {
      throw new Error(`TOOLGATE_API_KEYS_FILE ${path}: ${(err as Error).message}`)
    }
    return KeyRing.fromDocument(doc, `TOOLGATE_API_KEYS_FILE ${path}`)
  }

  /** The principal of an Authorization header, or null when it holds no valid key. */
  authenticate (authorization: string | undefined): Principal | null {
    if (this.open) return OPEN
    if (authorization === undefined) return null
    const match = /^Bearer[ ]+(\S{1,4096})\s*$/i.exec(authorization)
    if (match === null) return null
    const presented = createHash('sha256').update(match[1]!).digest()
    const stored = this.#byDigest.get(presented.toString('hex'))
    if (stored === undefined || !timingSafeEqual(stored.digest, presented)) return null
    return stored.principal
  }
}

export function sha256Hex (text: string): string {
  return createHash('sha256').update(text).digest('hex')
}
