import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { promisify } from 'node:util'

/**
 * The official MCP conformance suite's command line, as the conformance
 * tests run it. It needs Node 22+: the Node that runs the test when that is
 * new enough (.ci/run's Node 24 pass), else TOOLGATE_TEST_NODE24; undefined
 * when neither is there (the test then plans nothing).
 */
export const conformanceNode: string | undefined = Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : process.env.TOOLGATE_TEST_NODE24
export const NO_NODE22 = 'the conformance suite needs Node 22+: set TOOLGATE_TEST_NODE24 to a Node 22+ binary (.ci/run does)'

const cli = join(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json'), '..', 'dist', 'index.js')

/** Runs the suite with `args` in `cwd` (where it writes its results); answers its exit code and output, never rejects. */
export async function runConformance (node: string, args: readonly string[], cwd: string, timeoutMs: number): Promise<{ code: number, out: string }> {
  return await promisify(execFile)(node, [cli, ...args], { cwd, timeout: timeoutMs, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } })
    .then((r) => ({ code: 0, out: r.stdout + r.stderr }), (err: { code?: number, stdout?: string, stderr?: string }) => ({ code: err.code ?? 1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` }))
}
