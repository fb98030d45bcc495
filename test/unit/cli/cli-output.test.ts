import assert from 'node:assert/strict'
import {colourEnabled, noColour} from '../../../src/cli/colour.js'
import {structuredFormat} from '../../../src/cli/output-format.js'

describe('colourEnabled: colour only on a terminal, never with NO_COLOR (no-color.org)', () => {
  const tty = {isTTY: true}
  const cases: Array<[string, {isTTY?: boolean}, NodeJS.ProcessEnv, boolean]> = [
    ['a terminal', tty, {}, true],
    ['a pipe', {isTTY: false}, {}, false],
    ['a stream without isTTY', {}, {}, false],
    ['NO_COLOR=1', tty, {NO_COLOR: '1'}, false],
    ['NO_COLOR=0 (any value but empty)', tty, {NO_COLOR: '0'}, false],
    ['NO_COLOR empty: ignored', tty, {NO_COLOR: ''}, true],
    ['NO_COLOR beats FORCE_COLOR (as oclif\'s help and errors)', tty, {NO_COLOR: '1', FORCE_COLOR: '3'}, false],
    ['FORCE_COLOR=0', tty, {FORCE_COLOR: '0'}, false],
    ['FORCE_COLOR=false', tty, {FORCE_COLOR: 'false'}, false],
    ['FORCE_COLOR=1 does not colour a pipe', {isTTY: false}, {FORCE_COLOR: '1'}, false],
    ['TERM=dumb', tty, {TERM: 'dumb'}, false],
  ]
  for (const [name, stream, env, expected] of cases) {
    it(`${name} → ${expected ? 'colour' : 'no colour'}`, () => assert.equal(colourEnabled(stream, env), expected))
  }

  it('noColour: set and not empty', () => {
    assert.equal(noColour({}), false)
    assert.equal(noColour({NO_COLOR: ''}), false)
    assert.equal(noColour({NO_COLOR: 'yes'}), true)
  })
})

describe('structuredFormat: --json and -o json|yaml from the raw argv', () => {
  const cases: Array<[string[], 'json' | 'yaml' | undefined]> = [
    [[], undefined],
    [['--json'], 'json'],
    [['-o', 'json'], 'json'],
    [['-o', 'yaml'], 'yaml'],
    [['-oyaml'], 'yaml'],
    [['-o=yaml'], 'yaml'],
    [['--output', 'yaml'], 'yaml'],
    [['--output=json'], 'json'],
    [['-o', 'table'], undefined],
    [['-o', 'yaml', '-o', 'json'], 'json'], // the last one
    [['--json', '-o', 'table'], undefined],
    [['-n', 'x', '--', '--json'], undefined], // after --
    [['-o'], undefined],
    [['--kubeconfig', 'k', '-A', '--output', 'yaml'], 'yaml'],
  ]
  for (const [argv, expected] of cases) {
    it(`${argv.join(' ') || '(none)'} → ${expected ?? 'text'}`, () => assert.equal(structuredFormat(argv), expected))
  }
})
