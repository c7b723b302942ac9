// How tap runs the TypeScript tests (.taprc's node-arg): the hooks in
// ts-hooks.mjs transpile each .ts file once per content into a cache on
// disk, shared by every test process, instead of ts-node transpiling the
// whole source tree again in each of the suite's 120 processes (about 5 s
// of CPU each). Types are checked by `npm run typecheck`, as before.
import { register } from 'node:module'

register('./ts-hooks.mjs', import.meta.url)
