/**
 * Serving certificates that change while a server runs, one mechanism for every TLS listener of the process (the
 * DNS01 webhook's Secret, the metrics server's certificate directory): a key pair is checked before it is used
 * (both parse, the key belongs to the certificate), then swapped into the running server (`setCertificate`): TLS
 * handshakes from then on get it, connections already established keep theirs, nothing restarts. A pair that does
 * not check out is logged and the one in use stays.
 *
 * Where the pairs come from is the caller's: a Secret watch (dns01-webhook.ts) or `watchCertificateDir` below.
 */
import {createHash, createPrivateKey, X509Certificate} from 'node:crypto'
import {watch, type FSWatcher} from 'node:fs'
import {readFile} from 'node:fs/promises'
import path from 'node:path'
import {repeat, type Clock} from './clock.js'
import type {Logger} from './logger.js'

/** PEM certificate (chain, the server's first) and PEM private key. */
export interface KeyPair {
  cert: string
  key: string
}

/** What a log line says of a certificate (never the key). */
export interface CertificateSummary {
  subject: string
  /** SHA-256 fingerprint of the server certificate, as openssl prints it. */
  fingerprint: string
  notAfter: string
}

/** The file names in a certificate directory, as in a `kubernetes.io/tls` Secret mounted as a volume. */
export const TLS_CERT_FILE = 'tls.crt'
export const TLS_KEY_FILE = 'tls.key'

/** Checks that the pair is usable (both parse, the key is the certificate's) and summarises it; throws saying why not. */
export function checkKeyPair(pair: KeyPair): CertificateSummary {
  let certificate: X509Certificate
  try {
    certificate = new X509Certificate(pair.cert)
  } catch (error) {
    throw new Error(`the certificate is not PEM X.509: ${(error as Error).message}`)
  }
  let key
  try {
    key = createPrivateKey(pair.key)
  } catch (error) {
    throw new Error(`the private key is not a PEM key: ${(error as Error).message}`)
  }
  if (!certificate.checkPrivateKey(key)) throw new Error('the private key does not belong to the certificate')
  return {subject: certificate.subject.replace(/\n/g, ', '), fingerprint: certificate.fingerprint256, notAfter: new Date(certificate.validTo).toISOString()}
}

/** A server whose certificate can be replaced while it runs (RunningHttpServer of an https server). */
export interface CertificateTarget {
  setCertificate(pair: KeyPair): void
}

/**
 * Swaps checked pairs into a running server. `offer` is called with every pair a source sees (a repeated one is
 * ignored); the first call installs the first certificate of a server started without one.
 */
export class CertificateReloader {
  private current?: string
  private summary?: CertificateSummary

  constructor(private readonly server: CertificateTarget, private readonly logger: Pick<Logger, 'info' | 'warn'>, private readonly what: string) {}

  /** The certificate served now, if any. */
  get serving(): CertificateSummary | undefined {
    return this.summary
  }

  /** Serves `pair` from the next handshake on, if it checks out; true when it is now served (or already was). */
  offer(pair: KeyPair, source: string): boolean {
    const digest = createHash('sha256').update(pair.cert).update('\0').update(pair.key).digest('hex')
    if (digest === this.current) return true
    let summary: CertificateSummary
    try {
      summary = checkKeyPair(pair)
    } catch (error) {
      this.logger.warn(`${this.what}: new serving certificate not used, the current one stays`, {source, reason: (error as Error).message})
      return false
    }
    this.server.setCertificate(pair)
    const first = this.current === undefined
    this.current = digest
    this.summary = summary
    this.logger.info(first ? `${this.what}: serving certificate loaded` : `${this.what}: serving certificate reloaded`, {source, ...summary})
    return true
  }
}

/** tls.crt and tls.key of a directory. */
export async function readCertificateDir(dir: string): Promise<KeyPair> {
  const [cert, key] = await Promise.all([readFile(path.join(dir, TLS_CERT_FILE), 'utf8'), readFile(path.join(dir, TLS_KEY_FILE), 'utf8')])
  return {cert, key}
}

export interface CertificateDirWatchOptions {
  clock: Clock
  /** How often the files are read anyway, in case a file-system event is missed (default 10 s). */
  pollMs?: number
  /** Each pair read after a change (and at each poll); the receiver ignores repeats (CertificateReloader.offer). */
  onPair(pair: KeyPair): void
  /** A read that failed (a file missing for a moment while it is replaced): the pair in use stays. */
  onError(error: Error): void
}

/**
 * Watches a directory for new tls.crt/tls.key: file-system events on the directory (so the kubelet's swap of a
 * mounted Secret's `..data` symlink is seen as well as files written in place), and a poll every `pollMs`. Reads
 * one at a time; a change while reading reads again. A half-written pair (a new certificate with the old key) does
 * not check out and is skipped; the read after the second file's event gets both.
 */
export function watchCertificateDir(dir: string, options: CertificateDirWatchOptions): {stop(): void} {
  let stopped = false
  let reading = false
  let again = false
  const read = () => {
    if (stopped) return
    if (reading) {
      again = true
      return
    }
    reading = true
    readCertificateDir(dir).then(
      (pair) => !stopped && options.onPair(pair),
      (error: Error) => !stopped && options.onError(error),
    ).finally(() => {
      reading = false
      if (again) {
        again = false
        read()
      }
    })
  }
  let watcher: FSWatcher | undefined
  try {
    watcher = watch(dir, {persistent: false}, () => read())
    watcher.on('error', (error) => options.onError(error))
  } catch (error) {
    options.onError(error as Error) // the poll still sees changes
  }
  const stopPolling = repeat(options.clock, options.pollMs ?? 10_000, read)
  return {
    stop() {
      stopped = true
      watcher?.close()
      stopPolling()
    },
  }
}
