/**
 * Just enough X.509 to make TLS certificates without openssl or a dependency: an ECDSA P-256 key and a v3
 * certificate (DER built by hand, signed with node:crypto), self-signed or issued by a CA made here. Used for the
 * DNS01 webhook's serving certificate when no Secret provides one, and by tests for a front-proxy CA.
 */
import {createPrivateKey, generateKeyPairSync, randomBytes, sign} from 'node:crypto'
import {isIPv4, isIPv6} from 'node:net'

export interface CertificateAndKey {
  /** PEM certificate. */
  cert: string
  /** PEM private key (PKCS#8). */
  key: string
  /** The subject's common name; what a certificate issued by this one names as its issuer. */
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

const OID = {
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
}

/** A new key and certificate. */
export function createCertificate(options: CertificateOptions): CertificateAndKey {
  const {privateKey, publicKey} = generateKeyPairSync('ec', {namedCurve: 'prime256v1'})
  const now = options.now ?? new Date()
  const notBefore = new Date(now.getTime() - 5 * 60_000) // tolerate a little clock skew
  const notAfter = new Date(now.getTime() + (options.validityDays ?? 365) * 86_400_000)
  const serial = randomBytes(16)
  serial[0] = ((serial[0] ?? 0) & 0x3f) | 0x40 // positive, and no leading zero byte (DER: minimal INTEGER)
  const subject = name(options.commonName, options.organization)
  const issuer = options.issuer ? name(options.issuer.commonName, options.issuer.organization) : subject
  const signatureAlgorithm = sequence(oid(OID.ecdsaWithSha256))

  const extensions = [
    extension(OID.basicConstraints, true, options.isCa ? sequence(tlv(0x01, Buffer.from([0xff]))) : sequence()),
    extension(OID.keyUsage, true, bitString(options.isCa ? 0x80 | 0x04 | 0x02 : 0x80)),
  ]
  if (!options.isCa) {
    const usages = options.usages ?? ['server']
    extensions.push(extension(OID.extKeyUsage, false, sequence(...usages.map((u) => oid(u === 'server' ? OID.serverAuth : OID.clientAuth)))))
  }
  const altNames = [
    ...(options.dnsNames ?? []).map((dns) => tlv(0x82, Buffer.from(dns, 'ascii'))),
    ...(options.ipAddresses ?? []).map((ip) => tlv(0x87, ipBytes(ip))),
  ]
  if (altNames.length > 0) extensions.push(extension(OID.subjectAltName, false, sequence(...altNames)))

  const tbs = sequence(
    tlv(0xa0, integer(Buffer.from([2]))),
    integer(serial),
    signatureAlgorithm,
    issuer,
    sequence(time(notBefore), time(notAfter)),
    subject,
    publicKey.export({type: 'spki', format: 'der'}),
    tlv(0xa3, sequence(...extensions)),
  )
  const signingKey = options.issuer ? createPrivateKey(options.issuer.key) : privateKey
  const signature = sign('sha256', tbs, {key: signingKey, dsaEncoding: 'der'})
  const der = sequence(tbs, signatureAlgorithm, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])))
  return {
    cert: pem('CERTIFICATE', der),
    key: privateKey.export({type: 'pkcs8', format: 'pem'}).toString(),
    commonName: options.commonName,
    organization: options.organization,
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// DER

function tlv(tag: number, content: Buffer): Buffer {
  const length = content.length
  let header: Buffer
  if (length < 0x80) header = Buffer.from([tag, length])
  else {
    const bytes: number[] = []
    for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256)
    header = Buffer.from([tag, 0x80 | bytes.length, ...bytes])
  }
  return Buffer.concat([header, content])
}

function sequence(...items: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(items))
}

function integer(bytes: Buffer): Buffer {
  return tlv(0x02, (bytes[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes)
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number)
  const bytes = [first * 40 + second]
  for (const part of rest) {
    const chunk = [part & 0x7f]
    for (let value = Math.floor(part / 128); value > 0; value = Math.floor(value / 128)) chunk.unshift((value & 0x7f) | 0x80)
    bytes.push(...chunk)
  }
  return tlv(0x06, Buffer.from(bytes))
}

/** A named-bit BIT STRING of one byte, with its trailing zero bits declared unused (DER). */
function bitString(bits: number): Buffer {
  let unused = 0
  while (unused < 7 && ((bits >> unused) & 1) === 0) unused++
  return tlv(0x03, Buffer.from([unused, bits]))
}

function name(commonName: string, organization?: string): Buffer {
  const attribute = (type: string, value: string) => tlv(0x31, sequence(oid(type), tlv(0x0c, Buffer.from(value, 'utf8'))))
  return sequence(...(organization ? [attribute(OID.organization, organization)] : []), attribute(OID.commonName, commonName))
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value))
}

/** UTCTime until 2049, GeneralizedTime from 2050 on (RFC 5280 4.1.2.5). */
function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14) // YYYYMMDDHHMMSS
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`))
}

function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number))
  if (!isIPv6(ip)) throw new Error(`not an IP address: ${ip}`)
  const [head = '', tail = ''] = ip.split('::')
  const groups = (part: string) => (part === '' ? [] : part.split(':'))
  const left = groups(head)
  const right = ip.includes('::') ? groups(tail) : []
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  return Buffer.from(all.flatMap((group) => {
    const value = parseInt(group, 16)
    return [value >> 8, value & 0xff]
  }))
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? []
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`
}
