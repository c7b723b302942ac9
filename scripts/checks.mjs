// What `npm test` runs before the suite: the type check, the lint and the
// build, side by side (each waits on one core as much as it works on it).
// Each one's output is printed whole once it ends, so the three never
// interleave; the first failure is reported and the exit status is non-zero
// when any failed. Plain JavaScript: it runs before anything is built.
import { Buffer } from 'node:buffer'
import { spawn } from 'node:child_process'
import process from 'node:process'

const CHECKS = ['typecheck', 'lint', 'build']
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function run (script) {
  return new Promise((resolve) => {
    const child = spawn(npm, ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] })
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
