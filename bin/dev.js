#!/usr/bin/env node
/**
 * Runs the CLI from the TypeScript sources, without a build: tsx is registered here, before anything else loads,
 * and the root plugin reads its commands from src/commands and ignores oclif.manifest.json (which points into
 * dist/). oclif's own lookup (tsconfig rootDir → outDir) cannot map dist/ to src/ here, because tsconfig.json's
 * rootDir is the repository (it type-checks tests and scripts too).
 */
import {readFileSync} from 'node:fs'
import {fileURLToPath, URL} from 'node:url'
import {register} from 'tsx/esm/api'

register()
const {execute, Plugin, settings} = await import('@oclif/core')
const root = fileURLToPath(new URL('..', import.meta.url))
const pjson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
settings.enableAutoTranspile = false
const plugin = new Plugin({root, isRoot: true, ignoreManifest: true, pjson: {...pjson, oclif: {...pjson.oclif, commands: './src/commands'}}})
await plugin.load()
// Errors print as bin/run.js prints them (a line, no stack trace); DEBUG=* shows the stack, as oclif does there too.
await execute({development: false, loadOptions: {root, plugins: new Map([[plugin.name, plugin]])}})
