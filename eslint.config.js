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
