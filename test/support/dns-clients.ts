/** The real DNS webhook clients (external-dns, cert-manager's DNS01 client driver), built on first use by test/dnsclients/build.sh. */
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {execa} from 'execa'

const buildScript = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../dnsclients/build.sh')
let built: Promise<{externalDns: string; certManagerDriver: string}> | undefined

/** Paths of the binaries; builds them into ~/.cache/polycrate-operator the first time (external-dns: minutes). */
export function dnsClients(log: (line: string) => void = (line) => process.stderr.write(`[dns clients] ${line}\n`)) {
  built ??= (async () => {
    const child = execa('bash', [buildScript], {stdout: 'pipe', stderr: 'pipe'})
    child.stderr?.on('data', (chunk: Buffer) => log(chunk.toString().trimEnd()))
    const {stdout} = await child
    const paths = new Map(stdout.trim().split('\n').map((line) => line.split('=') as [string, string]))
    const externalDns = paths.get('external-dns')
    const certManagerDriver = paths.get('certmanager-driver')
    if (!externalDns || !certManagerDriver) throw new Error(`test/dnsclients/build.sh printed no binaries:\n${stdout}`)
    return {externalDns, certManagerDriver}
  })()
  return built
}
