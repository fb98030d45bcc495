import assert from 'node:assert/strict'
import {canonicalGoDuration, formatGoDuration, isGoDuration, parseGoDuration} from '../../../src/lib/duration.js'

const ns = 1n
const us = 1_000n
const ms = 1_000_000n
const s = 1_000_000_000n
const m = 60n * s
const h = 60n * m

describe('Go durations', () => {
  describe('parseGoDuration (Go time.ParseDuration test table)', () => {
    const valid: Array<[string, bigint]> = [
      ['0', 0n], ['5s', 5n * s], ['30s', 30n * s], ['1478s', 1478n * s],
      ['-5s', -5n * s], ['+5s', 5n * s], ['-0', 0n], ['+0', 0n],
      ['5.0s', 5n * s], ['5.6s', 5n * s + 600n * ms], ['5.s', 5n * s], ['.5s', 500n * ms],
      ['1.0s', s], ['1.00s', s], ['1.004s', s + 4n * ms], ['1.0040s', s + 4n * ms], ['100.00100s', 100n * s + ms],
      ['10ns', 10n * ns], ['11us', 11n * us], ['12µs', 12n * us], ['12μs', 12n * us], ['13ms', 13n * ms],
      ['14s', 14n * s], ['15m', 15n * m], ['16h', 16n * h],
      ['3h30m', 3n * h + 30n * m], ['10.5s4m', 4n * m + 10n * s + 500n * ms], ['-2m3.4s', -(2n * m + 3n * s + 400n * ms)],
      ['1h2m3s4ms5us6ns', h + 2n * m + 3n * s + 4n * ms + 5n * us + 6n * ns], ['39h9m14.425s', 39n * h + 9n * m + 14n * s + 425n * ms],
      ['52763797000ns', 52763797000n], ['9007199254740993ns', (1n << 53n) + 1n],
      ['9223372036854775807ns', (1n << 63n) - 1n], ['9223372036854775.807us', (1n << 63n) - 1n],
      ['9223372036s854ms775us807ns', (1n << 63n) - 1n],
      ['-9223372036854775808ns', -(1n << 63n)], ['-9223372036854775.808us', -(1n << 63n)],
      ['-2562047h47m16.854775808s', -(1n << 63n)],
      ['0.100000000000000000000h', 6n * m], ['0.830103483285477580700h', 49n * m + 48n * s + 372539827n],
      ['720h0m0s', 720n * h], ['96h', 96n * h], ['1h30m', h + 30n * m], ['1.5h', h + 30n * m],
    ]
    for (const [text, nanos] of valid) {
      it(`${JSON.stringify(text)} = ${nanos} ns`, () => {
        assert.equal(parseGoDuration(text), nanos)
        assert.equal(isGoDuration(text), true)
      })
    }

    const invalid = [
      '', '3', '-', 's', '.', '-.', '.s', '+.s', '1d', '30d', 'forever', '1h 30m', ' 1h', '1h ', '1H', '1h-30m', '+-1h',
      '\x85\x85', '\xffff', 'hello \xffff world',
      '9223372036854775808ns', '9223372036854775.808us', '9223372036854ms775us808ns', '9223372036s854ms775us808ns', '-9223372036854775809ns',
    ]
    for (const text of invalid) {
      it(`${JSON.stringify(text)} is not a Go duration`, () => {
        assert.equal(parseGoDuration(text), undefined)
        assert.equal(isGoDuration(text), false)
        assert.equal(canonicalGoDuration(text), undefined)
      })
    }

    it('a non-string is not a duration', () => {
      assert.equal(parseGoDuration(3600 as unknown as string), undefined)
    })
  })

  describe('formatGoDuration (Go Duration.String test table)', () => {
    const cases: Array<[bigint, string]> = [
      [0n, '0s'], [1n, '1ns'], [1100n, '1.1µs'], [2200n * us, '2.2ms'], [3300n * ms, '3.3s'],
      [4n * m + 5n * s, '4m5s'], [4n * m + 5001n * ms, '4m5.001s'], [5n * h + 6n * m + 7001n * ms, '5h6m7.001s'],
      [8n * m + 1n, '8m0.000000001s'], [(1n << 63n) - 1n, '2562047h47m16.854775807s'], [-(1n << 63n), '-2562047h47m16.854775808s'],
      [720n * h, '720h0m0s'], [96n * h, '96h0m0s'], [h + 30n * m, '1h30m0s'], [-h, '-1h0m0s'], [500n * us, '500µs'], [-1500n * ms, '-1.5s'],
    ]
    for (const [nanos, text] of cases) {
      it(`${nanos} ns → ${text}`, () => assert.equal(formatGoDuration(nanos), text))
    }
  })

  describe('canonicalGoDuration', () => {
    const cases: Array<[string, string]> = [
      ['96h', '96h0m0s'], ['720h0m0s', '720h0m0s'], ['1h30m', '1h30m0s'], ['90m', '1h30m0s'], ['1.5h', '1h30m0s'],
      ['0', '0s'], ['3600s', '1h0m0s'], ['-1h', '-1h0m0s'], ['1500ms', '1.5s'],
    ]
    for (const [text, canonical] of cases) {
      it(`${text} → ${canonical}`, () => assert.equal(canonicalGoDuration(text), canonical))
    }
  })
})
