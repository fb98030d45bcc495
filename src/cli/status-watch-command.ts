/**
 * `polycrate operator status --watch`: connects as `status` does, prints the report, then again on every change
 * (status-watch.ts) until SIGINT (Ctrl-C) or SIGTERM, and returns normally then (exit 0). A cluster that cannot be
 * read at the start fails as `status` does (exit 1); a read that fails later is a warning, and the watch goes on.
 */
import type {CrdDefinition} from '../crds/define.js'
import {toYaml} from '../crds/render.js'
import {KubeClient} from '../kube/client.js'
import {describeKubeError} from '../kube/errors.js'
import {loadKubeConfig} from '../kube/kubeconfig.js'
import {CrdsMissingError} from '../kube/resources-inventory.js'
import {colourEnabled} from './colour.js'
import {CommandFailure} from './command-outcome.js'
import {readStatus} from './status-read.js'
import {CRDS_MISSING, missingKindsWarning, renderStatus, type StatusReport} from './status-view.js'
import {statusFrame, statusWatchResources, watchStatus} from './status-watch.js'
import {systemClock} from '../lib/clock.js'

export interface StatusWatchOptions {
  kubeconfig?: string
  context?: string
  kinds: CrdDefinition[]
  namespace?: string
  /** --operator-namespace of `status`. */
  operatorNamespace?: string
  format: 'table' | 'json' | 'yaml'
  /** Where frames go (stdout) and warnings (stderr). */
  stdout?: NodeJS.WriteStream
  stderr?: NodeJS.WriteStream
}

export async function runStatusWatch(options: StatusWatchOptions): Promise<void> {
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  const {namespace} = options
  let client: KubeClient
  let server: string
  try {
    const loaded = loadKubeConfig({kubeconfig: options.kubeconfig, context: options.context})
    server = loaded.server
    client = KubeClient.from(loaded)
  } catch (error) {
    throw new CommandFailure(describeKubeError(error, 'list polycrate.io resources'), 1)
  }
  const stop = new AbortController()
  const onSignal = () => stop.abort()
  // `on`, not `once`, until the watch has stopped: with `once` the first signal removes the handler (and Node restores
  // the default action), so a second ^C, or a SIGTERM after it, before the informers have closed kills the process
  // (exit 130) instead of ending the watch with exit 0.
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  try {
    const read = async (): Promise<StatusReport> => (await readStatus(client, server, {kinds: options.kinds, namespace, operatorNamespace: options.operatorNamespace, posture: false})).report
    // The first read fails as `status` fails; it also says which kinds are missing and the posture warnings, once.
    try {
      const first = await readStatus(client, server, {kinds: options.kinds, namespace, operatorNamespace: options.operatorNamespace})
      if (first.missing.length > 0) stderr.write(`Warning: ${missingKindsWarning(first.missing)}\n`)
      for (const warning of first.posture) stderr.write(`Warning: ${warning}\n`)
    } catch (error) {
      if (error instanceof CrdsMissingError) throw new CommandFailure(CRDS_MISSING, 1)
      throw new CommandFailure(describeKubeError(error, 'list polycrate.io resources'), 1)
    }
    const terminal = Boolean(stdout.isTTY)
    const colour = colourEnabled(stdout)
    try {
      await watchStatus({
        client,
        watched: statusWatchResources(options.kinds, namespace),
        read,
        emit: (report) => {
          const now = systemClock.now()
          stdout.write(statusFrame(report, {format: options.format, terminal, now, namespace, colour}, {
            table: (shown) => renderStatus(shown, {now, namespace, colour}),
            yaml: (shown) => toYaml(shown),
          }))
        },
        onError: (error) => stderr.write(`Warning: ${describeKubeError(error, 'list polycrate.io resources')} (still watching)\n`),
        signal: stop.signal,
      })
    } catch (error) {
      throw new CommandFailure(describeKubeError(error, 'watch polycrate.io resources'), 1)
    }
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    client.close()
  }
}
