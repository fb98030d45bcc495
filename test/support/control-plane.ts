/**
 * Starts a real etcd + kube-apiserver (+ kube-controller-manager with only the namespace and garbage-collector
 * controllers) on free loopback ports, the way controller-runtime's envtest does. The binaries are built from
 * Go modules by test/controlplane/build.sh and cached outside the repo. A watchdog process tears everything
 * down when the process that started it dies, even by SIGKILL.
 *
 * With `node` set it is the control plane of a cluster with a real Node (see node.ts): the apiserver listens on all
 * addresses and advertises the Node's host address (the `kubernetes` Service's endpoint, reached from Pods through
 * kube-proxy), serves a certificate of its own CA valid for that address and the `kubernetes` Service's names and IP,
 * runs the ServiceAccount admission plugin, and kube-controller-manager runs all its default controllers (ServiceAccount
 * tokens, `kube-root-ca.crt`, ClusterRole aggregation, Deployments, Endpoints, node lifecycle, …).
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {generateKeyPairSync, randomBytes} from 'node:crypto'
import {createWriteStream} from 'node:fs'
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import https from 'node:https'
import net from 'node:net'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {execa} from 'execa'
import {createCertificate, type CertificateAndKey} from '../../src/lib/x509.js'
import {writeKubeconfig} from './kubeconfig-file.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const buildScript = path.resolve(here, '../controlplane/build.sh')

export interface ControlPlane {
  /** https://127.0.0.1:<port> */
  server: string
  /** Path of a kubeconfig with an admin identity (group system:masters). */
  kubeconfigPath: string
  token: string
  /** A valid token of user `nobody`, who has no RBAC rights (for 403 tests). */
  unprivilegedToken: string
  dir: string
  /**
   * The front-proxy (aggregation layer) PKI kube-apiserver runs with: the CA it publishes in
   * kube-system/extension-apiserver-authentication (allowed name `front-proxy-client`) and the client certificate
   * it presents to aggregated API servers.
   */
  frontProxy: {ca: CertificateAndKey; client: CertificateAndKey; allowedNames: string[]}
  /** With `node` only: the CA of the apiserver's serving certificate (what Pods get as ca.crt), and its file. */
  clusterCa?: CertificateAndKey & {file: string}
  /** With `node` only: the kubelet's token (user system:node:<name>, groups system:nodes and system:masters). */
  nodeToken?: string
  /** Stops the apiserver only (etcd keeps the data), to simulate an outage; `startApiServer` brings it back. */
  stopApiServer(): Promise<void>
  startApiServer(): Promise<void>
  /** A second kube-apiserver on the same etcd (another port, same tokens): changes made through it while the
   * first is down are what an operator sees after an outage of "its" apiserver. */
  startExtraApiServer(): Promise<{server: string; kubeconfigPath: string; stop(): Promise<void>}>
  stop(): Promise<void>
}

export interface ControlPlaneOptions {
  /** Also run kube-controller-manager (namespace deletion, owner-reference GC). Default true. */
  controllerManager?: boolean
  log?: (line: string) => void
  /** The control plane of a cluster with a real Node (node.ts). Default: none (an apiserver on loopback only, without
   * the ServiceAccount admission plugin, and only the namespace and garbage-collector controllers). */
  node?: NodeControlPlaneOptions
}

export interface NodeControlPlaneOptions {
  /** The host address Pods reach the apiserver at (the endpoint of the `kubernetes` Service). */
  advertiseAddress: string
  nodeName: string
  /** The Service IP range; its first address is the `kubernetes` Service. Default 10.0.0.0/24. */
  serviceClusterIpRange?: string
  /** The Pods' address range (kube-controller-manager's --cluster-cidr). */
  clusterCidr: string
}

/** Builds the binaries if they are not cached yet (with `node`, also kube-scheduler, kube-proxy and kubelet);
 * returns their directory. */
export async function ensureBinaries(log: (line: string) => void = () => {}, options: {node?: boolean} = {}): Promise<string> {
  const child = execa('bash', [buildScript, ...(options.node ? ['--node'] : [])], {stderr: 'pipe', stdout: 'pipe'})
  child.stderr?.on('data', (chunk: Buffer) => log(chunk.toString().trimEnd()))
  const {stdout} = await child
  const dir = stdout.trim().split('\n').pop()
  if (!dir) throw new Error('control-plane build printed no directory')
  return dir
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = options.log ?? (() => {})
  const bin = await ensureBinaries(log)
  const dir = await mkdtemp(path.join(tmpdir(), 'polycrate-cp-'))
  const [etcdPort, etcdPeerPort, apiPort] = [await freePort(), await freePort(), await freePort()]
  const token = randomBytes(24).toString('hex')
  const unprivilegedToken = randomBytes(24).toString('hex')
  const server = `https://127.0.0.1:${apiPort}`

  const {privateKey, publicKey} = generateKeyPairSync('rsa', {modulusLength: 2048})
  await writeFile(path.join(dir, 'sa.key'), privateKey.export({type: 'pkcs1', format: 'pem'}))
  await writeFile(path.join(dir, 'sa.pub'), publicKey.export({type: 'spki', format: 'pem'}))
  const frontProxyCa = await createCertificate({commonName: 'front-proxy-ca', isCa: true, validityDays: 30})
  const frontProxyClient = await createCertificate({commonName: 'front-proxy-client', usages: ['client'], issuer: frontProxyCa, validityDays: 30})
  await writeFile(path.join(dir, 'front-proxy-ca.crt'), frontProxyCa.cert)
  await writeFile(path.join(dir, 'front-proxy-client.crt'), frontProxyClient.cert)
  await writeFile(path.join(dir, 'front-proxy-client.key'), frontProxyClient.key)
  const node = options.node
  const serviceRange = node?.serviceClusterIpRange ?? '10.0.0.0/24'
  const nodeToken = node ? randomBytes(24).toString('hex') : undefined
  const nodeTokenLine = node ? `${nodeToken},system:node:${node.nodeName},node-uid,"system:nodes,system:masters"\n` : ''
  await writeFile(path.join(dir, 'tokens.csv'), `${token},admin,admin-uid,"system:masters"\n${unprivilegedToken},nobody,nobody-uid\n${nodeTokenLine}`)
  // A cluster with a Node: the serving certificate is issued by a CA of our own, which kube-controller-manager
  // publishes as `kube-root-ca.crt` (the ca.crt of every Pod), valid for every address Pods and the host use.
  let clusterCa: ControlPlane['clusterCa']
  const nodeArgs: string[] = []
  if (node) {
    const ca = await createCertificate({commonName: 'polycrate-test-cluster-ca', isCa: true, validityDays: 30})
    const serviceIp = firstAddress(serviceRange)
    const serving = await createCertificate({
      commonName: 'kube-apiserver', issuer: ca, validityDays: 30,
      dnsNames: ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local', 'localhost'],
      ipAddresses: [...new Set(['127.0.0.1', serviceIp, node.advertiseAddress])],
    })
    // The apiserver's client certificate towards the kubelet (logs, exec, port-forward).
    const kubeletClient = await createCertificate({commonName: 'kube-apiserver-kubelet-client', organization: 'system:masters', usages: ['client'], issuer: ca, validityDays: 30})
    clusterCa = {...ca, file: path.join(dir, 'ca.crt')}
    await writeFile(clusterCa.file, ca.cert)
    await writeFile(path.join(dir, 'apiserver.crt'), serving.cert)
    await writeFile(path.join(dir, 'apiserver.key'), serving.key)
    await writeFile(path.join(dir, 'kubelet-client.crt'), kubeletClient.cert)
    await writeFile(path.join(dir, 'kubelet-client.key'), kubeletClient.key)
    nodeArgs.push(
      '--tls-cert-file', path.join(dir, 'apiserver.crt'), '--tls-private-key-file', path.join(dir, 'apiserver.key'),
      '--kubelet-client-certificate', path.join(dir, 'kubelet-client.crt'), '--kubelet-client-key', path.join(dir, 'kubelet-client.key'),
      '--kubelet-preferred-address-types', 'InternalIP,Hostname',
    )
  }

  const children = new Set<ChildProcess>()
  const start = (name: string, args: string[]): ChildProcess => {
    const out = createWriteStream(path.join(dir, `${name}.log`), {flags: 'a'})
    const child = spawn(path.join(bin, name), args, {stdio: ['ignore', 'pipe', 'pipe']})
    child.stdout?.pipe(out)
    child.stderr?.pipe(out)
    children.add(child)
    child.on('exit', () => children.delete(child))
    watchdog(child.pid!)
    return child
  }
  // The watchdog kills a child once this process is gone, whatever way it went, and then removes the directory.
  const watchdog = (pid: number) => {
    const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 1; done; kill -TERM ${pid} 2>/dev/null; sleep 3; kill -KILL ${pid} 2>/dev/null; kill -0 ${process.pid} 2>/dev/null || rm -rf '${dir}'; true`
    spawn('bash', ['-c', script], {detached: true, stdio: 'ignore'}).unref()
  }

  const etcd = start('etcd', [
    '--name', 'test', '--data-dir', path.join(dir, 'etcd'),
    '--listen-client-urls', `http://127.0.0.1:${etcdPort}`, '--advertise-client-urls', `http://127.0.0.1:${etcdPort}`,
    '--listen-peer-urls', `http://127.0.0.1:${etcdPeerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeerPort}`,
    '--initial-cluster', `test=http://127.0.0.1:${etcdPeerPort}`,
    '--unsafe-no-fsync', '--log-level', 'warn', '--quota-backend-bytes', String(4 * 1024 ** 3),
  ])

  const apiServerArgs = (port: number, certDir: string) => [
    '--etcd-servers', `http://127.0.0.1:${etcdPort}`,
    '--cert-dir', certDir,
    '--secure-port', String(port),
    ...(node
      ? ['--bind-address', '0.0.0.0', '--advertise-address', node.advertiseAddress, ...nodeArgs]
      : ['--bind-address', '127.0.0.1', '--advertise-address', '127.0.0.1', '--disable-admission-plugins', 'ServiceAccount']),
    '--service-cluster-ip-range', serviceRange, '--allow-privileged',
    '--authorization-mode', 'RBAC',
    '--token-auth-file', path.join(dir, 'tokens.csv'),
    '--service-account-issuer', `${server}/`,
    '--service-account-key-file', path.join(dir, 'sa.pub'),
    '--service-account-signing-key-file', path.join(dir, 'sa.key'),
    '--enable-priority-and-fairness=false',
    // The aggregation layer (APIServices): the front-proxy CA and client certificate, as kubeadm sets them up.
    '--requestheader-client-ca-file', path.join(dir, 'front-proxy-ca.crt'),
    '--requestheader-allowed-names', 'front-proxy-client',
    '--requestheader-username-headers', 'X-Remote-User',
    '--requestheader-group-headers', 'X-Remote-Group',
    '--requestheader-extra-headers-prefix', 'X-Remote-Extra-',
    '--proxy-client-cert-file', path.join(dir, 'front-proxy-client.crt'),
    '--proxy-client-key-file', path.join(dir, 'front-proxy-client.key'),
    '-v', '1',
  ]
  let apiServer = start('kube-apiserver', apiServerArgs(apiPort, path.join(dir, 'certs')))

  const kubeconfigPath = await writeKubeconfig(path.join(dir, 'kubeconfig'), server, token, clusterCa?.cert)

  const stopChild = async (child: ChildProcess) => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(timer)
  }

  const failed = (name: string, child: ChildProcess) =>
    new Promise<never>((_, reject) =>
      child.once('exit', async (code) => {
        const tail = (await readFile(path.join(dir, `${name}.log`), 'utf8').catch(() => '')).split('\n').slice(-20).join('\n')
        reject(new Error(`${name} exited with ${code}:\n${tail}`))
      }),
    )

  const waitReady = async (url = server) => {
    const deadline = Date.now() + 90_000
    while (Date.now() < deadline) {
      if (await probe(url, token)) return
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    throw new Error(`kube-apiserver not ready after 90s; see ${dir}/kube-apiserver.log`)
  }

  const controlPlane: ControlPlane = {
    server,
    kubeconfigPath,
    token,
    unprivilegedToken,
    dir,
    frontProxy: {ca: frontProxyCa, client: frontProxyClient, allowedNames: ['front-proxy-client']},
    clusterCa,
    nodeToken,
    async stopApiServer() {
      await stopChild(apiServer)
    },
    async startApiServer() {
      apiServer = start('kube-apiserver', apiServerArgs(apiPort, path.join(dir, 'certs')))
      await Promise.race([waitReady(), failed('kube-apiserver', apiServer)])
    },
    async startExtraApiServer() {
      const port = await freePort()
      const extra = start('kube-apiserver', apiServerArgs(port, path.join(dir, `certs-${port}`)))
      const url = `https://127.0.0.1:${port}`
      await Promise.race([waitReady(url), failed('kube-apiserver', extra)])
      const kubeconfig = await writeKubeconfig(path.join(dir, `kubeconfig-${port}`), url, token, clusterCa?.cert)
      return {server: url, kubeconfigPath: kubeconfig, stop: () => stopChild(extra)}
    },
    async stop() {
      await Promise.all([...children].filter((c) => c !== etcd).map(stopChild))
      await stopChild(etcd)
      await rm(dir, {recursive: true, force: true})
    },
  }

  try {
    await Promise.race([waitReady(), failed('etcd', etcd), failed('kube-apiserver', apiServer)])
    if (options.controllerManager ?? true) {
      start('kube-controller-manager', [
        '--kubeconfig', kubeconfigPath,
        ...(node
          ? ['--controllers', '*', '--root-ca-file', path.join(dir, 'ca.crt'), '--cluster-cidr', node.clusterCidr, '--service-cluster-ip-range', serviceRange,
            // not /usr/libexec/kubernetes/kubelet-plugins/volume/exec/, which it would create
            '--flex-volume-plugin-dir', path.join(dir, 'flexvolume')]
          : ['--controllers', 'namespace-controller,garbage-collector-controller']),
        '--leader-elect=false',
        '--secure-port', '0',
        '--service-account-private-key-file', path.join(dir, 'sa.key'),
        '--use-service-account-credentials=false',
        '-v', '1',
      ])
    }
  } catch (error) {
    await controlPlane.stop().catch(() => {})
    throw error
  }
  return controlPlane
}

/** The first host address of an IPv4 range: 10.0.0.0/24 → 10.0.0.1 (the `kubernetes` Service's IP). */
export function firstAddress(cidr: string): string {
  const [address = '', bits = '32'] = cidr.split('/')
  const octets = address.split('.').map(Number)
  if (octets.length !== 4 || octets.some((o) => !(o >= 0 && o <= 255))) throw new Error(`not an IPv4 range: ${cidr}`)
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0
  const value = ((((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0) & mask) + 1
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.')
}

function probe(server: string, token: string): Promise<boolean> {
  return new Promise((resolve) => {
    const request = https.get(
      `${server}/readyz`,
      {headers: {Authorization: `Bearer ${token}`}, rejectUnauthorized: false, timeout: 2000},
      (response) => {
        response.resume()
        resolve(response.statusCode === 200)
      },
    )
    request.on('error', () => resolve(false))
    request.on('timeout', () => request.destroy())
  })
}
