import {readFileSync} from 'node:fs'

let cached: string | undefined

/**
 * The operator's version: package.json's, one directory up from src/ (tsx) and dist/ (built), two from the bundle of
 * `operator run` (dist/run/).
 */
export function operatorVersion(): string {
  cached ??= ['../package.json', '../../package.json'].map(readVersion).find((version) => version !== undefined) ?? '0.0.0'
  return cached
}

function readVersion(relative: string): string | undefined {
  try {
    const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as {version?: unknown}
    return typeof pkg.version === 'string' ? pkg.version : undefined
  } catch {
    return undefined
  }
}
