import assert from 'node:assert/strict'
import {parseQuantity, toCores, toMebibytes} from '../../../src/lib/quantity.js'

describe('quantity', () => {
  describe('parseQuantity: valid quantities', () => {
    const cases: Array<[string, number]> = [
      ['0', 0],
      ['1', 1],
      ['42', 42],
      ['0.5', 0.5],
      ['.5', 0.5],
      ['1.', 1],
      ['1Ki', 1024],
      ['1Mi', 1048576],
      ['1Gi', 1073741824],
      ['1.5Gi', 1610612736],
      ['1Ti', 1099511627776],
      ['1Pi', 1125899906842624],
      ['1Ei', 1152921504606846976],
      ['16393232Ki', 16786669568],
      ['1k', 1000],
      ['1M', 1e6],
      ['10G', 1e10],
      ['2T', 2e12],
      ['1P', 1e15],
      ['1E', 1e18],
      ['100m', 0.1],
      ['3500m', 3.5],
      ['250000n', 0.00025],
      ['5u', 0.000005],
      ['1e3', 1000],
      ['1E3', 1000],
      ['1e+3', 1000],
      ['1e-3', 0.001],
      ['2.5e2', 250],
      ['1.15k', 1150],
      ['4.35', 4.35],
      ['-1', -1],
      ['-1.5Gi', -1610612736],
      ['+2Ki', 2048],
      [' 1Gi ', 1073741824],
      ['007', 7],
    ]
    for (const [text, expected] of cases) {
      it(`${JSON.stringify(text)} → ${expected}`, () => assert.equal(parseQuantity(text), expected))
    }

    it('"-0" is 0, not -0', () => assert.ok(Object.is(parseQuantity('-0'), 0)))
  })

  describe('parseQuantity: invalid text → undefined', () => {
    const invalid = [
      '', ' ', 'Gi', '10 Gi', 'Gb', '10Gb', '1K', '1KiB', '1gi', '1mi', '1i', 'NaN', 'Infinity', '-Infinity', '-', '+',
      '--1', '+-1', '-Gi', '-garbage', '1e', 'e3', '1e3.5', '1e3Gi', '1Gi2', '0x10', '1_000', '1,5', '1.2.3', '1..2',
      '1e400', '1 000', '\t', 'abc',
    ]
    for (const text of invalid) it(JSON.stringify(text), () => assert.equal(parseQuantity(text), undefined))

    it('a non-string (from an untyped object) → undefined', () => {
      assert.equal(parseQuantity(4 as unknown as string), undefined)
      assert.equal(parseQuantity(undefined as unknown as string), undefined)
    })
  })

  describe('toMebibytes', () => {
    const cases: Array<[string, number | undefined]> = [
      ['16Gi', 16384],
      ['16393232Ki', 16009],
      ['2048Mi', 2048],
      ['17179869184', 16384],
      ['1.5Gi', 1536],
      ['1G', 953],
      ['1048576', 1],
      ['1048575', 0],
      ['0', 0],
      ['100m', 0],
      ['8Ei', 8796093022208],
      ['1e30', undefined],
      ['-1Gi', undefined],
      ['16 Gi', undefined],
      ['lots', undefined],
      ['', undefined],
    ]
    for (const [text, expected] of cases) {
      it(`${JSON.stringify(text)} → ${expected}`, () => assert.equal(toMebibytes(text), expected))
    }
  })

  describe('toCores', () => {
    const cases: Array<[string, number | undefined]> = [
      ['4', 4],
      ['3500m', 3],
      ['4000m', 4],
      ['500m', 1],
      ['1m', 1],
      ['1n', 1],
      ['1.9', 1],
      ['0', 0],
      ['0m', 0],
      ['64', 64],
      ['1k', 1000],
      ['1e30', undefined],
      ['-1', undefined],
      ['four', undefined],
      ['4 cores', undefined],
      ['', undefined],
    ]
    for (const [text, expected] of cases) {
      it(`${JSON.stringify(text)} → ${expected}`, () => assert.equal(toCores(text), expected))
    }
  })
})
