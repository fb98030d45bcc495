import {writeFile} from 'node:fs/promises'
import yaml from 'js-yaml'

/** Writes a kubeconfig with one cluster, one token user and one context named `test`. */
export async function writeKubeconfig(file: string, server: string, token: string): Promise<string> {
  await writeFile(file, yaml.dump({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{name: 'test', cluster: {server, 'insecure-skip-tls-verify': true}}],
    users: [{name: 'user', user: {token}}],
    contexts: [{name: 'test', context: {cluster: 'test', user: 'user'}}],
    'current-context': 'test',
  }))
  return file
}
