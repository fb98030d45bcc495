import {existsSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/**
 * Layering of src/: data flows commands → cli, operator → api, kube → crds, lib, and nothing imports from a layer
 * above it. For each folder, the folders it may not import from. (api and kube are one layer: they may use each
 * other, crds and lib.)
 */
const layering = 'commands → cli, operator → api, kube → crds, lib'
const forbiddenImports = {
  lib: ['api', 'kube', 'crds', 'operator', 'cli', 'commands'],
  crds: ['api', 'kube', 'operator', 'cli', 'commands'],
  api: ['operator', 'cli', 'commands'],
  kube: ['operator', 'cli', 'commands'],
  operator: ['cli', 'commands'],
  cli: ['commands'],
}

/**
 * A relative import that climbs out of the importing folder into `folder`: `../operator`, `../operator/x.js`,
 * `../../operator/runtime/x.js` (any depth, optionally after `./`). Packages such as `@acme/operator` and sibling
 * paths such as `./operator/x.js` or `../operators/x.js` do not match.
 */
const relativeImportOf = (folder) => `^(?:\\./)?(?:\\.\\./)+${folder}(?:/|$)`

const layerRules = Object.entries(forbiddenImports).map(([folder, above]) => ({
  files: [`src/${folder}/**`],
  rules: {
    'no-restricted-imports': ['error', {
      patterns: above.map((other) => ({
        regex: relativeImportOf(other),
        message: `src/${folder} may not import from src/${other}: the layers are ${layering}, and nothing imports from a layer above it.`,
      })),
    }],
  },
}))

/**
 * Inside src/operator: the kinds (src/operator/kinds/<kind>/) declare themselves to the generic engines, so
 * - the engines (discovery/, sync/, runtime/) never import a kind;
 * - a kind imports another kind only through a link declared here; anything else two kinds share lives in lib/,
 *   discovery/ (its own types, names, timestamps) or kube/ (the resource table);
 * - only operator.ts imports the feature registry (registry.ts imports every kind; anything else importing it would
 *   depend on all of them).
 * Checked on resolved paths, so `../artifact/x.js` and `../../kinds/artifact/x.js` are the same import.
 */
const kindLinks = {
  // K8sApp discovery reads container images as Artifact discovery parses them (parseImage, registry filters, names).
  k8sapp: ['artifact'],
  // Artifact discovery shares K8sApp's one slim-pod informer (pods.ts) and its pod → app rule.
  artifact: ['k8sapp'],
}
const engines = ['discovery', 'sync', 'runtime']
const root = path.dirname(fileURLToPath(import.meta.url))
for (const [kind, links] of Object.entries(kindLinks)) {
  for (const name of [kind, ...links]) {
    if (!existsSync(path.join(root, 'src/operator/kinds', name))) throw new Error(`kindLinks names src/operator/kinds/${name}, which does not exist`)
  }
}

/** The message for an import of `target` by `file` (repo-relative, no extension) that breaks a rule, else undefined. */
function operatorImportProblem(file, target) {
  const kindOf = (p) => /^src\/operator\/kinds\/([^/]+)\//.exec(p)?.[1]
  const engine = engines.find((name) => file.startsWith(`src/operator/${name}/`))
  const targetKind = kindOf(target)
  if (engine && targetKind) {
    return `src/operator/${engine} may not import src/operator/kinds/${targetKind}: the engines are generic; kinds import engines, never the other way round.`
  }
  const fileKind = kindOf(file)
  if (fileKind && targetKind && fileKind !== targetKind && !(kindLinks[fileKind] ?? []).includes(targetKind)) {
    return `src/operator/kinds/${fileKind} may not import src/operator/kinds/${targetKind}: a kind imports another only through a link declared in kindLinks (eslint.config.js); move what they share to lib/, discovery/ or kube/.`
  }
  if (target === 'src/operator/registry' && file !== 'src/operator/operator') {
    return 'only src/operator/operator.ts imports src/operator/registry.ts (it imports every feature); take what you need from operator.ts or as a parameter.'
  }
  return undefined
}

const operatorImports = {
  meta: {type: 'problem', docs: {description: 'the import rules inside src/operator (engines, kinds, registry)'}, schema: []},
  create(context) {
    const withoutExtension = (p) => p.replace(/\.[cm]?[jt]s$/, '')
    const file = withoutExtension(path.relative(root, context.filename).split(path.sep).join('/'))
    const check = (source) => {
      if (source?.type !== 'Literal' || typeof source.value !== 'string' || !source.value.startsWith('.')) return
      const resolved = path.resolve(path.dirname(context.filename), source.value)
      const target = withoutExtension(path.relative(root, resolved).split(path.sep).join('/'))
      const message = operatorImportProblem(file, target)
      if (message) context.report({node: source, message})
    }
    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
    }
  },
}

export default tseslint.config(
  {ignores: ['dist/**', 'node_modules/**', 'oclif.manifest.json', 'test/controlplane/**']},
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_', varsIgnorePattern: '^_'}],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  ...layerRules,
  {
    files: ['src/**/*.ts'],
    plugins: {house: {rules: {'operator-imports': operatorImports}}},
    rules: {'house/operator-imports': 'error'},
  },
  {
    // A function is wiring plus named parts: none in src/ grows past 80 lines (its nested closures included).
    files: ['src/**'],
    rules: {
      'max-lines-per-function': ['error', {max: 80, skipBlankLines: true, skipComments: true, IIFEs: true}],
    },
  },
  {
    files: ['bin/**/*.js', 'eslint.config.js'],
    languageOptions: {globals: {console: 'readonly', process: 'readonly'}},
  },
)
