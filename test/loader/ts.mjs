// How tap runs the TypeScript tests (.taprc's node-arg): the hooks in
// ts-hooks.mjs transpile each .ts file once per content into a cache on
// disk, shared by every test process, instead of ts-node transpiling the
// whole source tree again in each of the suite's processes (about 5 s of
// CPU each). Types are checked by `npm run typecheck`, as before.
//
// Where Node runs module hooks in the loading thread (module.registerHooks,
// dependable from Node 24.13 and 25.1, the versions from which tap's own
// hook uses it too), the hooks run there: no hooks thread and no round trip
// to it for each module. Below, they run on the hooks thread (register).
import module from 'node:module'
import process from 'node:process'

const [major, minor] = process.versions.node.split('.').map(Number)
const inThread = typeof module.registerHooks === 'function' && (major > 25 || (major === 25 && minor >= 1) || (major === 24 && minor >= 13))

if (inThread) {
  const { resolveSync, loadSync } = await import('./ts-hooks.mjs')
  module.registerHooks({ resolve: resolveSync, load: loadSync })
} else {
  module.register('./ts-hooks.mjs', import.meta.url)
}
