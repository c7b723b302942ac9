import { createHash } from 'node:crypto'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'

/**
 * The page may run its own scripts and styles and talk to this origin, and
 * nothing else: no inline script or style, no other origin, no framing, no
 * forms posting anywhere, no plugins.
 */
export const UI_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "img-src 'self' data:",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"
].join('; ')

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml'
}

interface Asset { body: Buffer, type: string, etag: string }

/**
 * Where the page's files are: `ui/` at the package root, beside `routes/`
 * when run from source and beside `dist/` when built (the Docker image
 * copies it there too).
 */
export function findUiDir (): string | undefined {
  for (const up of ['../ui/', '../../ui/']) {
    const dir = fileURLToPath(new URL(up, import.meta.url))
    if (existsSync(`${dir}index.html`)) return dir
  }
  return undefined
}

/** Every servable file of the directory, read once: the page is a handful of small files. */
function loadAssets (dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>()
  for (const name of readdirSync(dir)) {
    const type = TYPES[name.slice(name.lastIndexOf('.'))]
    if (type === undefined || !/^[a-z0-9-]+\.[a-z]+$/.test(name)) continue
    const body = readFileSync(dir + name)
    assets.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` })
  }
  return assets
}

/** The operator's page at /ui: static files only, no key needed to load them; the page asks the API with the visitor's key. */
export const uiRoutes: FastifyPluginAsync<{ dir: string }> = async (app, { dir }) => {
  const assets = loadAssets(dir)
  const send = (reply: FastifyReply, asset: Asset, ifNoneMatch: string | undefined): FastifyReply => {
    reply
      .header('content-security-policy', UI_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY')
      .header('cross-origin-opener-policy', 'same-origin')
      .header('cache-control', 'no-cache')
      .header('etag', asset.etag)
    if (ifNoneMatch === asset.etag) return reply.code(304).send()
    return reply.type(asset.type).send(asset.body)
  }
  const schema = { hide: true }

  // Relative links inside the page resolve against /ui/, so /ui itself sends the browser there.
  app.get('/ui', { schema }, async (_req, reply) => reply.redirect('ui/', 302))
  app.get('/ui/', { schema }, async (req, reply) => send(reply, assets.get('index.html')!, req.headers['if-none-match']))
  app.get<{ Params: { file: string } }>('/ui/:file', { schema }, async (req, reply) => {
    const asset = assets.get(req.params.file)
    if (asset === undefined) return reply.callNotFound()
    return send(reply, asset, req.headers['if-none-match'])
  })
}
