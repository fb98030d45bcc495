import * as Flags from '@oclif/core/flags'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {CATALOG_GROUP, crdCatalog, findKindNames, type CrdNames} from '../../crds/catalog.js'

export default class Crds extends JsonAwareCommand {
  static override summary = 'Print the operator\'s CustomResourceDefinitions as YAML.'
  static override description =
    'Generated from the TypeScript schemas of the operator. Pipe into `kubectl apply -f -` (as the operator ' +
    'reference does; `kubectl apply --server-side -f -` works too), or write one file per CRD with --output-dir for GitOps.'

  static override examples = [
    '<%= config.bin %> <%= command.id %> | kubectl apply -f -',
    '<%= config.bin %> <%= command.id %> | kubectl apply --server-side -f -',
    '<%= config.bin %> <%= command.id %> --kind OperatorConfig',
    '<%= config.bin %> <%= command.id %> --output-dir ./crds/',
    '<%= config.bin %> <%= command.id %> --list',
  ]

  static override enableJsonFlag = true

  static override flags = {
    kind: Flags.string({
      char: 'k',
      summary: 'Only this CRD: kind, plural or short name, any case.',
      multiple: true,
    }),
    list: Flags.boolean({summary: 'List the CRDs (kind, group, plural, short names, scope) instead of printing them.'}),
    'output-dir': Flags.directory({
      summary: 'Write one <group>_<plural>.yaml per CRD into this directory (created if missing).',
      exclusive: ['list'],
    }),
  }

  async run(): Promise<unknown> {
    const {flags} = await this.parse(Crds)
    const names = flags.kind ? flags.kind.map((name) => this.resolveKind(name)) : [...crdCatalog]

    if (flags.list) {
      // Names only: neither the schemas (zod) nor YAML are loaded for the list.
      const rows = names.map((def) => ({
        kind: def.kind,
        group: CATALOG_GROUP,
        plural: def.plural,
        shortNames: def.shortNames,
        scope: def.scope,
      }))
      if (!this.jsonEnabled()) {
        const {renderTable} = await import('../../cli/table.js')
        this.log(renderTable(
          ['KIND', 'GROUP', 'PLURAL', 'SHORT NAMES', 'SCOPE'],
          rows.map((r) => [r.kind, r.group, r.plural, r.shortNames.join(',') || '-', r.scope]),
        ))
      }
      return rows
    }

    const [{allCrds}, {crdFileName, customResourceDefinitions, toMultiDocumentYaml, toYaml}] = await Promise.all([
      import('../../crds/index.js'), import('../../crds/render.js'),
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
        if (!this.jsonEnabled()) this.log(file)
      }
      return {files}
    }

    if (!this.jsonEnabled()) process.stdout.write(toMultiDocumentYaml(crds))
    return {apiVersion: 'v1', kind: 'List', items: crds}
  }

  private resolveKind(name: string): CrdNames {
    const def = findKindNames(name)
    if (!def) {
      const valid = crdCatalog.map((d) => `${d.kind} (${[d.plural, ...d.shortNames].join(', ')})`).join('; ')
      this.error(`Unknown kind "${name}". Valid kinds: ${valid}.`, {exit: 2})
    }
    return def
  }
}
