/**
 * `polycrate operator crds`: its flags and what it does, shared by the oclif command and the fast path. `--list`
 * loads neither the schemas (zod) nor YAML: only the catalog of names.
 */
import {CATALOG_GROUP, crdCatalog, findKindNames, type CrdNames} from '../crds/catalog.js'
import {CommandFailure, type CommandOutcome, type CommandOutput} from './command-outcome.js'
import type {FlagSpecs, FlagValues} from './flag-spec.js'

export const crdsFlags = {
  output: {
    type: 'string',
    char: 'o',
    options: ['yaml', 'json'],
    summary: 'yaml: the CRDs as YAML documents (the default); json: one List (--json); with --list or --output-dir, the document --json prints.',
  },
  kind: {type: 'string', char: 'k', summary: 'Only this CRD: kind, plural or short name, any case.', multiple: true},
  list: {type: 'boolean', summary: 'List the CRDs (kind, group, plural, short names, scope) instead of printing them.'},
  'output-dir': {
    type: 'string',
    path: 'directory',
    summary: 'Write one <group>_<plural>.yaml per CRD into this directory (created if missing).',
    exclusive: ['list'],
  },
} as const satisfies FlagSpecs

export async function runCrds(flags: FlagValues<typeof crdsFlags>, out: CommandOutput): Promise<CommandOutcome<unknown>> {
  const names = flags.kind ? flags.kind.map((name) => resolveKind(name)) : [...crdCatalog]

  if (flags.list) {
    const rows = names.map((def) => ({
      kind: def.kind,
      group: CATALOG_GROUP,
      plural: def.plural,
      shortNames: def.shortNames,
      scope: def.scope,
    }))
    if (!out.json) {
      const {renderTable} = await import('./table.js')
      out.log(renderTable(
        ['KIND', 'GROUP', 'PLURAL', 'SHORT NAMES', 'SCOPE'],
        rows.map((r) => [r.kind, r.group, r.plural, r.shortNames.join(',') || '-', r.scope]),
      ))
    }
    return {value: rows, exit: 0}
  }

  const [{allCrds}, {crdFileName, customResourceDefinitions, toMultiDocumentYaml, toYaml}] = await Promise.all([
    import('../crds/index.js'), import('../crds/render.js'),
  ])
  const defs = names.map((entry) => allCrds.find((def) => def.kind === entry.kind)!)
  const crds = customResourceDefinitions(defs)
  if (flags['output-dir']) {
    const [{mkdir, writeFile}, path] = await Promise.all([import('node:fs/promises'), import('node:path')])
    const dir = path.resolve(flags['output-dir'])
    await mkdir(dir, {recursive: true})
    const files: string[] = []
    for (const [index, def] of defs.entries()) {
      const file = path.join(dir, crdFileName(def))
      await writeFile(file, toYaml(crds[index]))
      files.push(file)
      if (!out.json) out.log(file)
    }
    return {value: {files}, exit: 0}
  }

  if (!out.json) out.write(toMultiDocumentYaml(crds))
  return {value: {apiVersion: 'v1', kind: 'List', items: crds}, exit: 0}
}

function resolveKind(name: string): CrdNames {
  const def = findKindNames(name)
  if (!def) {
    const valid = crdCatalog.map((d) => `${d.kind} (${[d.plural, ...d.shortNames].join(', ')})`).join('; ')
    throw new CommandFailure(`Unknown kind "${name}". Valid kinds: ${valid}.`, 2)
  }
  return def
}
