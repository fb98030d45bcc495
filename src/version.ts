import {readFileSync} from 'node:fs'

let cached: string | undefined

/** The operator's version: package.json's (the same file from src/ under tsx and from dist/ when built). */
export function operatorVersion(): string {
  if (cached === undefined) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {version?: unknown}
      cached = typeof pkg.version === 'string' ? pkg.version : '0.0.0'
    } catch {
      cached = '0.0.0'
    }
  }
  return cached
}
