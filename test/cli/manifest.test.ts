import assert from 'node:assert/strict'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import path from 'node:path'
import {pathToFileURL} from 'node:url'
import type {Command} from '@oclif/core'

const root = path.resolve(import.meta.dirname, '../..')
const commandsDir = path.join(root, 'src/commands')

function commandFiles(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((entry) =>
    entry.isDirectory() ? commandFiles(path.join(dir, entry.name)) : entry.name.endsWith('.ts') ? [path.join(dir, entry.name)] : [],
  )
}

interface ManifestCommand {
  id: string
  summary?: string
  flags: Record<string, {name: string; type: string}>
}

describe('oclif.manifest.json (written by npm run build)', () => {
  it('matches the commands in src/commands: same ids, flags and summaries', async () => {
    const file = path.join(root, 'oclif.manifest.json')
    assert.ok(existsSync(file), 'oclif.manifest.json is missing: run npm run build')
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as {commands: Record<string, ManifestCommand>}
    const fromSource: Record<string, {flags: string[]; summary?: string}> = {}
    for (const source of commandFiles(commandsDir)) {
      const id = path.relative(commandsDir, source).replace(/\.ts$/, '').split(path.sep).join(':')
      const cls = (await import(pathToFileURL(source).href)).default as typeof Command
      const flags = Object.keys(cls.flags ?? {})
      if (cls.enableJsonFlag) flags.push('json')
      fromSource[id] = {flags: flags.sort(), summary: cls.summary}
    }
    const fromManifest = Object.fromEntries(
      Object.values(manifest.commands).map((c) => [c.id, {flags: Object.keys(c.flags).sort(), summary: c.summary}]),
    )
    assert.deepEqual(fromManifest, fromSource, 'oclif.manifest.json is stale: run npm run build')
  })
})
