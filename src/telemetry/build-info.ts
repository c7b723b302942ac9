import { readFileSync } from 'node:fs'

/** What `toolgate_build_info` says of this process. */
export interface BuildInfo {
  version: string
  nodeVersion: string
}

/** package.json from src/telemetry/ (tests) or dist/src/telemetry/ (the built service). */
const PACKAGE_FILES = ['../../package.json', '../../../package.json']

let cached: BuildInfo | undefined

/** toolgate's version, read once from its package.json (`unknown` when it cannot be found), and Node's. */
export function buildInfo (): BuildInfo {
  return (cached ??= { version: readVersion(), nodeVersion: process.versions.node })
}

function readVersion (): string {
  for (const file of PACKAGE_FILES) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(file, import.meta.url), 'utf8')) as { name?: unknown, version?: unknown }
      if (pkg.name === 'toolgate' && typeof pkg.version === 'string') return pkg.version
    } catch { /* the next place */ }
  }
  return 'unknown'
}
