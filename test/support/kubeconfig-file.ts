import {writeFile} from 'node:fs/promises'
import yaml from 'js-yaml'

/** Writes a kubeconfig with one cluster, one token user and one context named `test`. Without `caPem` the server's
 * certificate is not verified. */
export async function writeKubeconfig(file: string, server: string, token: string, caPem?: string): Promise<string> {
  const tls = caPem ? {'certificate-authority-data': Buffer.from(caPem).toString('base64')} : {'insecure-skip-tls-verify': true}
  await writeFile(file, yaml.dump({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{name: 'test', cluster: {server, ...tls}}],
    users: [{name: 'user', user: {token}}],
    contexts: [{name: 'test', context: {cluster: 'test', user: 'user'}}],
    'current-context': 'test',
  }))
  return file
}
