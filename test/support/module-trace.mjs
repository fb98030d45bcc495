// `node --import ./test/support/module-trace.mjs …`: appends the URL of every module the process resolves to
// $MODULE_TRACE_FILE, so a test can tell which path the CLI took (oclif loaded or not).
import {register} from 'node:module'
import process from 'node:process'

register('./module-trace-hooks.mjs', import.meta.url, {data: {file: process.env.MODULE_TRACE_FILE}})
