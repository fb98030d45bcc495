import Table from 'cli-table3'

/** A borderless, left-aligned table like kubectl's. */
export function renderTable(headers: string[], rows: string[][]): string {
  const table = new Table({
    head: headers,
    chars: {
      top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
      bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
      left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '   ',
    },
    style: {head: [], border: [], 'padding-left': 0, 'padding-right': 0},
  })
  table.push(...rows)
  return table.toString().split('\n').map((line) => line.trimEnd()).join('\n')
}
