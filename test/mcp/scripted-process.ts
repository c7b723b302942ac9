import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** The scripted server of ./scripted-child.ts, in a process of its own. */
export interface ScriptedProcess {
  url: string
  /** Sends it a signal (SIGUSR2: a storm of list_changed, see ./scripted-child.ts). */
  signal: (signal: NodeJS.Signals) => void
  close: () => Promise<void>
}

/** Starts ./scripted-child.ts listing `count` tools, with its `flags` (`sse`, `costly`). */
export async function startScriptedProcess (count: number, flags: string[] = []): Promise<ScriptedProcess> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(new URL('./scripted-child.ts', import.meta.url)), String(count), ...flags], { stdio: ['ignore', 'pipe', 'inherit'] })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('\n')) resolve(out.trim())
    })
    child.once('exit', (code) => { reject(new Error(`the scripted server exited (${code})`)) })
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return { url, signal: (signal) => { child.kill(signal) }, close: async () => { child.kill('SIGTERM'); await exited } }
}
