/**
 * TLS certificates without openssl: an ECDSA P-256 key and a v3 certificate, self-signed or issued by a CA made here.
 * Used for the DNS01 webhook's serving certificate when no Secret provides one, and by tests for CAs and clients.
 *
 * The certificate is built and signed by `@peculiar/x509` (ASN.1/DER by `@peculiar/asn1-*`) over Node's WebCrypto; no
 * DER is written here. Our own code is only the profile: which names, extensions and validity a certificate gets.
 * The library (with `reflect-metadata`, which its dependency injection needs as a global) costs ~0.3 s and ~10 MB of
 * RSS to load, so it is imported on the first certificate made, not when this module is: an operator whose webhook
 * serves a Secret's certificate never loads it. A running operator makes its certificates with
 * `createCertificateOffThread`: the library then loads in a worker thread, not on the event loop.
 */
import {createPrivateKey, randomBytes, webcrypto} from 'node:crypto'
import {isIP} from 'node:net'
import {Worker} from 'node:worker_threads'
import type * as X509Library from '@peculiar/x509'
import {systemClock} from './clock.js'

export interface CertificateAndKey {
  /** PEM certificate. */
  cert: string
  /** PEM private key (PKCS#8). */
  key: string
  /** The subject's common name. */
  commonName: string
  organization?: string
}

export interface CertificateOptions {
  commonName: string
  organization?: string
  dnsNames?: readonly string[]
  ipAddresses?: readonly string[]
  /** A CA certificate (may sign others). Default false. */
  isCa?: boolean
  /** Extended key usages; default server auth. */
  usages?: ReadonlyArray<'server' | 'client'>
  /** Default 365. */
  validityDays?: number
  /** Signs the certificate; without it, it is self-signed. */
  issuer?: CertificateAndKey
  now?: Date
}

type X509 = typeof X509Library
let library: Promise<X509> | undefined

/** `@peculiar/x509`, loaded once, with Node's WebCrypto as its provider. */
function x509(): Promise<X509> {
  library ??= (async () => {
    await import('reflect-metadata') // tsyringe (the library's DI container) throws on import without it
    const lib = await import('@peculiar/x509')
    lib.cryptoProvider.set(webcrypto)
    return lib
  })()
  return library
}

const EC = {name: 'ECDSA', namedCurve: 'P-256'} as const
const SIGNING = {name: 'ECDSA', hash: 'SHA-256'} as const

/** A new key and certificate. */
export async function createCertificate(options: CertificateOptions): Promise<CertificateAndKey> {
  for (const ip of options.ipAddresses ?? []) if (!isIP(ip)) throw new Error(`not an IP address: ${ip}`)
  const lib = await x509()
  const subtle = webcrypto.subtle
  const keys = await subtle.generateKey(EC, true, ['sign', 'verify'])
  const now = options.now ?? new Date(systemClock.now())
  const serial = randomBytes(16)
  serial[0] = ((serial[0] ?? 0) & 0x3f) | 0x40 // positive, and no leading zero byte (DER: minimal INTEGER)

  const subject = new lib.Name([
    ...(options.organization ? [{O: [{utf8String: options.organization}]}] : []),
    {CN: [{utf8String: options.commonName}]},
  ])
  // The issuer's subject as it is encoded in its certificate: chain building (Go's, OpenSSL's) compares the bytes.
  const issuer = options.issuer ? new lib.X509Certificate(options.issuer.cert).subjectName : subject
  const signingKey = options.issuer
    ? await subtle.importKey('pkcs8', createPrivateKey(options.issuer.key).export({type: 'pkcs8', format: 'der'}), EC, false, ['sign'])
    : keys.privateKey

  const {KeyUsageFlags: usage} = lib
  const extensions: Array<InstanceType<X509['Extension']>> = [
    new lib.BasicConstraintsExtension(options.isCa ?? false, undefined, true),
    new lib.KeyUsagesExtension(options.isCa ? usage.digitalSignature | usage.keyCertSign | usage.cRLSign : usage.digitalSignature, true),
  ]
  if (!options.isCa) {
    const usages = options.usages ?? ['server']
    extensions.push(new lib.ExtendedKeyUsageExtension(usages.map((u) => (u === 'server' ? lib.ExtendedKeyUsage.serverAuth : lib.ExtendedKeyUsage.clientAuth)), false))
  }
  const altNames = [
    ...(options.dnsNames ?? []).map((value) => ({type: 'dns' as const, value})),
    ...(options.ipAddresses ?? []).map((value) => ({type: 'ip' as const, value})),
  ]
  if (altNames.length > 0) extensions.push(new lib.SubjectAlternativeNameExtension(altNames, false))

  const certificate = await lib.X509CertificateGenerator.create({
    serialNumber: serial.toString('hex'),
    subject,
    issuer,
    notBefore: new Date(now.getTime() - 5 * 60_000), // tolerate a little clock skew
    notAfter: new Date(now.getTime() + (options.validityDays ?? 365) * 86_400_000),
    signingAlgorithm: SIGNING,
    publicKey: keys.publicKey,
    signingKey,
    extensions,
  })
  const pkcs8 = Buffer.from(await subtle.exportKey('pkcs8', keys.privateKey))
  return {
    cert: `${certificate.toString('pem').replace(/\r\n/g, '\n').trimEnd()}\n`,
    key: createPrivateKey({key: pkcs8, format: 'der', type: 'pkcs8'}).export({type: 'pkcs8', format: 'pem'}).toString(),
    commonName: options.commonName,
    organization: options.organization,
  }
}

/**
 * `createCertificate` in a worker thread (x509-worker.ts), for a running process: loading the library blocks the
 * thread that loads it for ~0.3 s (measured: the event loop stalled 230–350 ms for the first certificate), and the
 * worker's memory goes with it. Issuers are passed as PEM, so any option works here too.
 */
export function createCertificateOffThread(options: CertificateOptions): Promise<CertificateAndKey> {
  // Built, the worker is the .js next to this module (dist/lib/, or the run bundle's dist/run/). From the sources the
  // worker loads the .ts file through tsx's tsImport: Node 20 runs no module hooks (tsx) for a worker's entry.
  const fromSources = import.meta.url.endsWith('.ts')
  const url = new URL(fromSources ? './x509-worker.ts' : './x509-worker.js', import.meta.url)
  const workerData = {...options, now: options.now?.getTime()}
  return new Promise((resolve, reject) => {
    const worker = fromSources
      ? new Worker(`import('tsx/esm/api').then(({tsImport}) => tsImport(${JSON.stringify(url.href)}, ${JSON.stringify(import.meta.url)}))`, {eval: true, workerData})
      : new Worker(url, {workerData})
    let result: CertificateAndKey | undefined
    worker.once('message', (message: CertificateAndKey) => (result = message))
    worker.once('error', reject)
    worker.once('exit', (code) => (result ? resolve(result) : reject(new Error(`the certificate worker exited (${code}) without a certificate`))))
  })
}
