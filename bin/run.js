#!/usr/bin/env node
// The fast path runs `operator crds|health|explain` without loading oclif (src/cli/fast-path.ts); anything it does
// not take (help, an error in the arguments, another command, POLYCRATE_NO_FAST_PATH=1) goes to oclif.
const {runFastPath} = await import('../dist/fast-path/fast-path.js')
if (!(await runFastPath(process.argv.slice(2)))) {
  const {execute} = await import('@oclif/core/execute')
  await execute({dir: import.meta.url})
}
