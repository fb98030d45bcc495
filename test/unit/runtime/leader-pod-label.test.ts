import assert from 'node:assert/strict'
import {KubeApiError, type KubeClient} from '../../../src/kube/client.js'
import {createLogger} from '../../../src/lib/logger.js'
import {LeaderPodLabel} from '../../../src/operator/runtime/leader-pod-label.js'
import {eventually} from '../../support/helpers.js'

/** mergePatch of the Pod, answered by hand: each call waits until the test settles it. */
class FakePods {
  readonly calls: Array<{value: string; settle: (error?: Error) => void; signal?: AbortSignal}> = []
  readonly client = {
    mergePatch: (_ref: unknown, patch: {metadata: {labels: Record<string, string>}}, options: {signal?: AbortSignal}) => new Promise((resolve, reject) => {
      this.calls.push({
        value: patch.metadata.labels['polycrate.io/leader']!,
        settle: (error) => (error ? reject(error) : resolve({})),
        signal: options.signal,
      })
      options.signal?.addEventListener('abort', () => reject(new Error('aborted')), {once: true})
    }),
  } as unknown as KubeClient

  async next(count: number): Promise<void> {
    await eventually(() => this.calls.length >= count, 10_000, `${count} patch calls`)
    assert.equal(this.calls.length, count, `${count} patch calls, no more`)
  }
}

describe('LeaderPodLabel', () => {
  const lines: Array<Record<string, unknown>> = []
  const logger = createLogger({level: 'debug', format: 'json', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>)})
  const label = (pods: FakePods) => new LeaderPodLabel({client: pods.client, namespace: 'polycrate', podName: 'operator-0', logger, backoff: {initialMs: 1, maxMs: 5}})
  beforeEach(() => (lines.length = 0))

  it('writes the latest value once the write in flight lands, and nothing when the label already says it', async () => {
    const pods = new FakePods()
    const labeler = label(pods)
    labeler.set(false)
    await pods.next(1)
    labeler.set(true)
    labeler.set(false)
    labeler.set(true) // only the latest counts
    pods.calls[0]!.settle()
    await pods.next(2)
    assert.equal(pods.calls[1]!.value, 'true')
    pods.calls[1]!.settle()
    await eventually(() => lines.some((line) => line.msg === 'pod labelled' && line.value === 'true'), 10_000, 'the label applied')
    labeler.set(true)
    // The positive signal: the next write is close()'s "false"; none for the value already applied came before it.
    const closing = labeler.close(1000)
    await pods.next(3)
    assert.deepEqual(pods.calls.map((call) => call.value), ['false', 'true', 'false'], 'no write for a value already applied')
    pods.calls[2]!.settle()
    await closing
  })

  it('retries a failed write with backoff and names a missing Pod in its warning', async () => {
    const pods = new FakePods()
    const labeler = label(pods)
    labeler.set(true)
    await pods.next(1)
    pods.calls[0]!.settle(new KubeApiError(404, 'NotFound', 'pods "operator-0" not found'))
    await pods.next(2)
    assert.equal(pods.calls[1]!.value, 'true')
    const warning = lines.find((line) => line.msg === 'could not label this replica\'s pod; retrying')
    assert.match(String(warning?.reason), /no Pod polycrate\/operator-0: --pod-name \(env POD_NAME\)/)
    pods.calls[1]!.settle()
    await eventually(() => lines.some((line) => line.msg === 'pod labelled' && line.value === 'true'), 10_000, 'the label applied')
    const closing = labeler.close(1000)
    await pods.next(3)
    assert.equal(pods.calls[2]!.value, 'false')
    pods.calls[2]!.settle()
    await closing
  })

  it('close() gives up after its deadline when the apiserver does not answer, and aborts the write', async () => {
    const pods = new FakePods()
    const labeler = label(pods)
    labeler.set(true)
    await pods.next(1)
    await labeler.close(20)
    assert.equal(pods.calls[0]!.signal?.aborted, true)
    labeler.set(true)
    assert.equal(pods.calls.length, 1, 'no write after close')
  })
})
