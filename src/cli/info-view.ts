/** What `polycrate operator info` prints (pure): the install settings, the OperatorConfig's, features and endpoints. */
import {Chalk} from 'chalk'
import type {OperatorInfo, Setting} from '../operator/install/info.js'
import {renderTable} from './table.js'

export const INFO_TITLE = 'Polycrate Operator Configuration'

const indent = (block: string) => block.split('\n').map((line) => (line.length > 0 ? `  ${line}` : line)).join('\n')
const underline = (heading: string, char: string) => `${heading}\n${char.repeat(heading.length)}`

function settingsTable(settings: readonly Setting[], paint: InstanceType<typeof Chalk>): string {
  return renderTable(['SETTING', 'VALUE', 'FROM'], settings.map((setting) => [setting.path, setting.value, setting.from === 'set' ? paint.bold('set') : paint.dim('default')]))
}

export function renderInfo(info: OperatorInfo, options: {colour?: boolean; state?: string} = {}): string {
  const paint = new Chalk({level: options.colour ? 1 : 0})
  const blocks = [`${underline(INFO_TITLE, '=')}\nFrom:       ${info.source}\nNamespace:  ${info.namespace}${options.state ? `\nState:      ${options.state}` : ''}`]
  if (info.install.length > 0) blocks.push(`${underline('Install', '-')}\n${indent(settingsTable(info.install, paint))}`)
  const config = info.operatorConfig
  const problems = config.problems.length > 0
    ? `\n${indent(paint.red(`INVALID — the operator keeps the last valid configuration (or pauses discovery): ${config.problems.join('; ')}`))}`
    : ''
  blocks.push(`${underline(`OperatorConfig ${config.name}${config.found ? '' : ' (not found: the defaults)'}`, '-')}${problems}\n${indent(settingsTable(config.settings, paint))}`)
  const reported = info.features.some((feature) => feature.reported)
  blocks.push(`${underline('Features', '-')}\n${indent(renderTable(
    ['FEATURE', 'STATE', 'WHY', ...(reported ? ['REPORTED'] : [])],
    info.features.map((feature) => [
      feature.name,
      feature.on ? paint.green('on') : 'off',
      feature.why,
      ...(reported ? [feature.reported ? `${feature.reported.running ? 'running' : 'not running'}${feature.reported.reason && feature.reported.reason !== 'Running' ? `: ${feature.reported.reason}` : ''}` : '-'] : []),
    ]),
  ))}`)
  blocks.push(`${underline('Endpoints served', '-')}\n${indent(renderTable(['NAME', 'PORT', 'PATHS', 'WHO MAY CALL'], info.endpoints.map((endpoint) => [endpoint.name, String(endpoint.port), endpoint.paths, endpoint.callers])))}`)
  return blocks.join('\n\n')
}
