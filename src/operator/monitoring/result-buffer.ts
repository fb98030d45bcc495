/**
 * Check results waiting for the API: a bounded FIFO. A batch is taken from the front without removing it and
 * acknowledged by sequence number once the API answered 201, so a failed report sends the same results again
 * (nothing lost) and an acknowledged one is never sent again (nothing duplicated). When the buffer is full the
 * oldest result is dropped and counted. A result that leaves (acknowledged or dropped) is no longer referenced.
 */
import type {CheckResultInput} from '../../api/index.js'

interface Item {
  seq: number
  result: CheckResultInput
  bytes: number
}

export interface Batch {
  /** Acknowledge with this to remove exactly these results. */
  lastSeq: number
  results: CheckResultInput[]
}

export class ResultBuffer {
  /** Slots before `head` are empty (results that left); compacted once they are half of the array. */
  private items: Array<Item | undefined> = []
  private head = 0
  private nextSeq = 1
  /** Results dropped (oldest first) because the buffer was full. */
  dropped = 0

  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new RangeError('ResultBuffer capacity must be at least 1')
  }

  get size(): number {
    return this.items.length - this.head
  }

  push(result: CheckResultInput): void {
    if (this.size >= this.capacity) {
      this.items[this.head++] = undefined
      this.dropped++
    }
    this.items.push({seq: this.nextSeq++, result, bytes: Buffer.byteLength(JSON.stringify(result))})
    this.compact()
  }

  /** The oldest results, at most `maxResults` and `maxBytes` of JSON (at least one result when any). */
  peek(maxResults: number, maxBytes: number): Batch | undefined {
    if (this.size === 0) return undefined
    const results: CheckResultInput[] = []
    let bytes = 0
    let lastSeq = 0
    for (let i = this.head; i < this.items.length && results.length < maxResults; i++) {
      const item = this.items[i]!
      if (results.length > 0 && bytes + item.bytes > maxBytes) break
      results.push(item.result)
      bytes += item.bytes
      lastSeq = item.seq
    }
    return {lastSeq, results}
  }

  /** Removes every result up to `lastSeq` (those already dropped meanwhile are simply gone). */
  ack(lastSeq: number): void {
    while (this.head < this.items.length && this.items[this.head]!.seq <= lastSeq) this.items[this.head++] = undefined
    this.compact()
  }

  /**
   * Drops the empty slots once they are at least half of the array: each compaction copies fewer results than it
   * drops slots, so it costs O(1) per result, and the array is at most twice the results it holds.
   */
  private compact(): void {
    if (this.head > 0 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }
}
