// What `npm test` runs before the suite: the type check, the lint and the
// build, side by side (each waits on one core as much as it works on it),
// and tap's build when .taprc's plugin list is not the one tap was built
// with (after `npm ci`, tap is built with all its default plugins; a test
// run would otherwise start its processes with the hooks of plugins the
// list leaves out, and rebuild only for the run after).
// Each one's output is printed whole once it ends, so they never
// interleave; the first failure is reported and the exit status is non-zero
// when any failed. Plain JavaScript: it runs before anything is built.
import { Buffer } from 'node:buffer'
import { spawn } from 'node:child_process'
import process from 'node:process'

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx'

/** Whether tap's built Test class has the plugins .taprc asks for. */
async function tapBuiltAsConfigured () {
  const { TapConfig } = await import('@tapjs/config')
  const { signature } = await import('@tapjs/test')
  const config = await TapConfig.load()
  return config.pluginSignature === signature
}

const CHECKS = ['typecheck', 'lint', 'build'].map((script) => ({ script, command: npm, args: ['run', '--silent', script] }))
if (!(await tapBuiltAsConfigured())) CHECKS.push({ script: 'tap build', command: npx, args: ['tap', 'build'] })

function run ({ script, command, args }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    const out = []
    child.stdout.on('data', (chunk) => out.push(chunk))
    child.stderr.on('data', (chunk) => out.push(chunk))
    child.on('error', (err) => resolve({ script, code: 1, output: `${script}: ${err.message}\n` }))
    child.on('close', (code, signal) => resolve({ script, code: code ?? (signal === null ? 1 : 128), output: Buffer.concat(out).toString() }))
  })
}

const results = await Promise.all(CHECKS.map(run))
let failed = 0
for (const { script, code, output } of results) {
  process.stdout.write(`> ${script}: ${code === 0 ? 'ok' : `failed (exit ${code})`}\n`)
  if (output.trim() !== '') process.stdout.write(output.endsWith('\n') ? output : `${output}\n`)
  if (code !== 0) failed++
}
process.exitCode = failed === 0 ? 0 : 1
