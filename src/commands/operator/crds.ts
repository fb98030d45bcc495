import {mkdir, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {Flags} from '@oclif/core'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {renderTable} from '../../cli/table.js'
import {allCrds, findCrd, GROUP} from '../../crds/index.js'
import {crdFileName, customResourceDefinitions, toMultiDocumentYaml, toYaml} from '../../crds/render.js'

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
    const defs = flags.kind ? flags.kind.map((name) => this.resolveKind(name)) : [...allCrds]

    if (flags.list) {
      const rows = defs.map((def) => ({
        kind: def.kind,
        group: GROUP,
        plural: def.plural,
        shortNames: def.shortNames,
        scope: def.scope,
      }))
      if (!this.jsonEnabled()) {
        this.log(renderTable(
          ['KIND', 'GROUP', 'PLURAL', 'SHORT NAMES', 'SCOPE'],
          rows.map((r) => [r.kind, r.group, r.plural, r.shortNames.join(',') || '-', r.scope]),
        ))
      }
      return rows
    }

    const crds = customResourceDefinitions(defs)
    if (flags['output-dir']) {
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

  private resolveKind(name: string) {
    const def = findCrd(name)
    if (!def) {
      const valid = allCrds.map((d) => `${d.kind} (${[d.plural, ...d.shortNames].join(', ')})`).join('; ')
      this.error(`Unknown kind "${name}". Valid kinds: ${valid}.`, {exit: 2})
    }
    return def
  }
}
