import assert from 'node:assert/strict'
import {createLogger} from '../../../src/lib/logger.js'
import {systemClock} from '../../../src/lib/clock.js'

describe('logger', () => {
  const capture = (format: 'json' | 'text', level: 'debug' | 'info' = 'info') => {
    const lines: string[] = []
    const logger = createLogger({format, level, write: (line) => lines.push(line), clock: {...systemClock, now: () => Date.parse('2026-01-01T00:00:00Z')}})
    return {logger, lines}
  }

  it('writes JSON lines with the child fields (controller, key)', () => {
    const {logger, lines} = capture('json')
    logger.child({controller: 'endpoint'}).child({key: 'ns/a'}).info('reconciled', {phase: 'Synced'})
    assert.deepEqual(JSON.parse(lines[0]!), {ts: '2026-01-01T00:00:00.000Z', level: 'info', msg: 'reconciled', controller: 'endpoint', key: 'ns/a', phase: 'Synced'})
  })

  it('writes readable text', () => {
    const {logger, lines} = capture('text')
    logger.warn('watch interrupted', {error: 'connection reset', attempt: 2})
    assert.equal(lines[0], '2026-01-01T00:00:00.000Z WARN  watch interrupted error="connection reset" attempt=2')
  })

  it('drops lines below the level', () => {
    const {logger, lines} = capture('json', 'info')
    logger.debug('noise')
    assert.equal(lines.length, 0)
    assert.equal(logger.enabled('debug'), false)
  })

  it('never writes values under secret-looking keys', () => {
    const {logger, lines} = capture('json')
    logger.info('calling API', {token: 'abc123', apiToken: 'x', password: 'p', authorization: 'Bearer abc123', secretKey: 's', workspace: 'w'})
    assert.doesNotMatch(lines[0]!, /abc123|"x"|"p"|"s"/)
    assert.match(lines[0]!, /"workspace":"w"/)
  })
})
