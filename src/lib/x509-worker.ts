/**
 * The worker thread of `createCertificateOffThread` (x509.ts): makes one certificate and posts it back. Loading
 * @peculiar/x509 blocks the thread that loads it for ~0.3 s; here that is not the operator's event loop.
 */
import {parentPort, workerData} from 'node:worker_threads'
import {createCertificate, type CertificateOptions} from './x509.js'

const options = workerData as CertificateOptions
parentPort?.postMessage(await createCertificate({...options, now: options.now === undefined ? undefined : new Date(options.now)}))
