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
 * - a kind imports no other kind: what two kinds share lives in lib/ (image references), kube/ (the resource table,
 *   conditions, slim pods), discovery/ (its own types, names, timestamps, the namespace scope) or a file of
 *   src/operator itself (app-pods.ts: the shared pod informer and the pod → app rule);
 * - only operator.ts imports the feature registry (registry.ts imports every kind; anything else importing it would
 *   depend on all of them);
 * - outside its folder a kind is imported through its index.ts (`features(session)`, nothing else), but for the
 *   files listed in `kindInternalsMayBeImportedBy` (the CLI's `explain`, which runs the endpoint explanation);
 * - the runtime (controllers, informers, the FeatureSet) stands under everything else in src/operator: it imports
 *   only itself and the operator's names (conventions.ts, permissions.ts); the Feature contract is generic in the
 *   configuration, so it needs nothing of config/.
 * Checked on resolved paths, so `../artifact/x.js` and `../../kinds/artifact/x.js` are the same import.
 */
const engines = ['discovery', 'sync', 'runtime']
/** What src/operator/runtime may import inside src/operator (files without extension, folders with a slash). */
const runtimeMayImport = ['src/operator/runtime/', 'src/operator/conventions', 'src/operator/permissions']
const root = path.dirname(fileURLToPath(import.meta.url))
/** src/ files that may import a kind's own files, not only its index.ts. */
const kindInternalsMayBeImportedBy = ['src/cli/explain-view']

/** The message for an import of `target` by `file` (repo-relative, no extension) that breaks a rule, else undefined. */
function operatorImportProblem(file, target) {
  const kindOf = (p) => /^src\/operator\/kinds\/([^/]+)\//.exec(p)?.[1]
  const engine = engines.find((name) => file.startsWith(`src/operator/${name}/`))
  const targetKind = kindOf(target)
  if (engine && targetKind) {
    return `src/operator/${engine} may not import src/operator/kinds/${targetKind}: the engines are generic; kinds import engines, never the other way round.`
  }
  const fileKind = kindOf(file)
  if (fileKind && targetKind && fileKind !== targetKind) {
    return `src/operator/kinds/${fileKind} may not import src/operator/kinds/${targetKind}: a kind imports no other kind; move what they share to lib/, kube/, discovery/ or a file of src/operator.`
  }
  if (file.startsWith('src/operator/runtime/') && target.startsWith('src/operator/')
    && !runtimeMayImport.some((allowed) => (allowed.endsWith('/') ? target.startsWith(allowed) : target === allowed))) {
    return `src/operator/runtime may not import ${target}: the runtime stands under the rest of the operator (it imports only itself, conventions.ts and permissions.ts); pass what it needs as a parameter or a type parameter.`
  }
  if (targetKind && !fileKind && target !== `src/operator/kinds/${targetKind}/index` && !kindInternalsMayBeImportedBy.includes(file)) {
    return `${file} may import src/operator/kinds/${targetKind} only through its index.ts (features(session)): the rest of a kind's folder is its own.`
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

const oneClock = 'time comes from the one clock (src/lib/clock.ts): take a Clock (the manager\'s, or systemClock) and use clock.now(), isoNow(clock), sleep/pause/poll(clock, …) or clock.setTimeout'

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
    // One clock (src/lib/clock.ts, whose header says why): nothing else in src/ reads the wall clock or sets a timer
    // of its own; it takes the manager's Clock (or systemClock where there is no manager: the CLI).
    files: ['src/**/*.ts'],
    ignores: ['src/lib/clock.ts'],
    rules: {
      'no-restricted-properties': ['error', {object: 'Date', property: 'now', message: oneClock}],
      'no-restricted-globals': ['error', ...['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval'].map((name) => ({name, message: oneClock}))],
      'no-restricted-syntax': ['error',
        {selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: oneClock},
        {selector: "ImportDeclaration[source.value=/^(node:)?timers(\\u002Fpromises)?$/]", message: oneClock},
      ],
    },
  },
  {
    files: ['bin/**/*.js', 'eslint.config.js'],
    languageOptions: {globals: {console: 'readonly', process: 'readonly', setTimeout: 'readonly'}},
  },
)
