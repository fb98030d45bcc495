/**
 * Compiles a function from settings to Kubernetes objects — the TypeScript that `manifests --values` runs — into
 * Helm templates (pure), by running it, not by reading it:
 *
 * 1. Every setting is a dimension with a few cases that together cover its values: a boolean's two, a string's
 *    placeholder (a unique token such as `zq3qz`), a count's 0…3 beside its placeholder, a list's empty and its
 *    sample (two unique items), absent where it may be left out. The base assignment puts each setting at its default
 *    or its placeholder.
 * 2. Where a placeholder shows up in an object, the object's template reads the setting there (inside strings, JSON
 *    documents and base64 too: template-tree.ts).
 * 3. Each object is rendered once more for every other case of every setting, from an assignment where it exists
 *    (its witness). Where a rendering differs from the witness' (after putting the case's value in for the
 *    placeholder), the setting decides that part: the smallest subtree where it differs becomes a branch. Several
 *    settings at one subtree are rendered in every combination of their classes (cases that render alike form one).
 * 4. An object that is absent in some cases gets the condition of the cases where it is present.
 *
 * What this cannot see is how settings interact beyond one subtree, or a value the function transforms (beyond
 * text, JSON and base64); the chart test compares `helm template` with `manifests --values` for generated values,
 * so that such a difference fails there, and here any placeholder left in literal text is an error.
 */
import type {KubeObject} from '../../kube/client.js'
import {ABSENT, deepEqual, toTemplate, type Absent, type Placeholders, type TemplateNode} from './template-tree.js'

export interface Case {
  label: string
  /** The setting's value in this case (ABSENT: left out). */
  value: unknown
  /** A Go template condition that holds for exactly the values of this case (placeholder: every value the other cases do not cover). */
  cond: string
  /** The placeholder case: its value stands for any value of the setting. */
  placeholder?: boolean
  /** A list setting's sample with its first item twice: rendered only to see whether the list is deduplicated. */
  probe?: boolean
}

export interface Dimension {
  name: string
  /** The Go template expression of the setting's value. */
  go: string
  cases: Case[]
  /** Index of the base case. */
  base: number
  /** A list setting: the two items of its placeholder case. */
  sampleItems?: readonly [unknown, unknown]
}

/** Dimension name → index of its case. */
export type Assignment = ReadonlyMap<string, number>

export interface CompileOptions {
  dimensions: readonly Dimension[]
  /** The objects for an assignment, or undefined when its values are not valid. */
  render(assignment: Assignment): KubeObject[] | undefined
  /** Marker → Go expression of the opaque fields the rendering put in (template-tree.ts OPAQUE). */
  opaque?: ReadonlyMap<string, string>
  /** At most this many combinations at one subtree (default 64). */
  maxCombinations?: number
}

export interface CompiledObject {
  /** `apiVersion kind namespace/name` as the witness rendered it (placeholders in it). */
  key: string
  object: KubeObject
  template: TemplateNode
  /** Settings that decide whether it exists, and that decide parts of it. */
  presence: string[]
  branches: Array<{path: string; settings: string[]}>
}

type Path = Array<string | number>

export class ChartCompileError extends Error {
  override name = 'ChartCompileError'
}

export function objectKey(object: KubeObject): string {
  return `${object.apiVersion} ${object.kind} ${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`
}

export function compileObjects(options: CompileOptions): CompiledObject[] {
  const {dimensions} = options
  const maxCombinations = options.maxCombinations ?? 64
  const base: Assignment = new Map(dimensions.map((dimension) => [dimension.name, dimension.base]))
  const cache = new Map<string, Map<string, KubeObject> | undefined>()
  const renderAt = (assignment: Assignment): Map<string, KubeObject> | undefined => {
    const id = dimensions.map((dimension) => assignment.get(dimension.name)).join(',')
    if (!cache.has(id)) {
      // As printed: JSON (undefined fields gone).
      const objects = options.render(assignment)?.map((object) => JSON.parse(JSON.stringify(object)) as KubeObject)
      cache.set(id, objects && new Map(objects.map((object) => [objectKey(object), object])))
    }
    return cache.get(id)
  }
  const baseObjects = renderAt(base)
  if (!baseObjects) throw new ChartCompileError('the base values (every setting at its default or placeholder) are not valid')
  const placeholders = placeholdersOf(dimensions, renderAt, base, options.opaque)

  // The witness of each object: the first assignment (base, then base with one case changed) where it exists.
  const witness = new Map<string, Assignment>([...baseObjects.keys()].map((key) => [key, base]))
  for (const dimension of dimensions) {
    dimension.cases.forEach((candidate, index) => {
      if (index === dimension.base || candidate.probe) return
      const assignment = withCase(base, dimension.name, index)
      for (const key of renderAt(assignment)?.keys() ?? []) if (!witness.has(key)) witness.set(key, assignment)
    })
  }

  const compiled: CompiledObject[] = []
  for (const [key, at] of witness) {
    const object = renderAt(at)!.get(key)!
    const presence = new Set<string>()
    const effects = new Map<string, Path[]>()
    for (const dimension of dimensions) {
      dimension.cases.forEach((candidate, index) => {
        if (index === at.get(dimension.name) || candidate.probe) return
        const rendered = renderAt(withCase(at, dimension.name, index))
        if (!rendered) return
        const variant = rendered.get(key)
        if (!variant) {
          presence.add(dimension.name)
          return
        }
        const expected = adapt(object, dimension.cases[at.get(dimension.name)!]!, candidate)
        const paths = differences(expected, variant)
        if (paths.length > 0) effects.set(dimension.name, [...(effects.get(dimension.name) ?? []), ...paths])
      })
    }

    // The smallest subtrees that settings decide, each with the settings whose differences lie in it.
    const all = [...effects.values()].flat()
    const nodes = uniquePaths(all.filter((path) => !all.some((other) => other.length < path.length && isPrefix(other, path))))
    const dimensionsAt = nodes.map((node) => dimensions.filter((dimension) => (effects.get(dimension.name) ?? []).some((path) => isPrefix(node, path))))

    let template = toTemplate(object, placeholders)
    const branchInfo: CompiledObject['branches'] = []
    nodes.forEach((node, index) => {
      const deciding = dimensionsAt[index]!
      const branches = branchesAt(node, deciding, at, key, renderAt, placeholders, maxCombinations)
      template = insertAt(template, object, node, mergeListBranches(branches), branchesSource(node, deciding, at, key, renderAt))
      branchInfo.push({path: node.join('.'), settings: deciding.map((dimension) => dimension.name)})
    })

    if (presence.size > 0) {
      const deciding = dimensions.filter((dimension) => presence.has(dimension.name))
      const cond = presenceCondition(deciding, at, key, renderAt, maxCombinations)
      template = {t: 'cond', branches: [{cond, node: template}]}
    }
    const residue = leftoverTokens(template, dimensions)
    if (residue.length > 0) {
      throw new ChartCompileError(`${key}: the setting${residue.length > 1 ? 's' : ''} ${residue.join(', ')} show${residue.length > 1 ? '' : 's'} up in it in a form the chart compiler cannot template (transformed?)`)
    }
    compiled.push({key, object, template, presence: [...presence], branches: branchInfo})
  }
  return compiled
}

function withCase(assignment: Assignment, name: string, index: number): Assignment {
  return new Map([...assignment, [name, index]])
}

/** The placeholders of all dimensions; a list setting's items found deduplicated in a rendering are written with uniq. */
function placeholdersOf(dimensions: readonly Dimension[], renderAt: (assignment: Assignment) => Map<string, KubeObject> | undefined, base: Assignment, opaque?: ReadonlyMap<string, string>): Placeholders {
  const strings = new Map<string, string>()
  const numbers = new Map<number, string>()
  const lists: Array<{items: readonly [unknown, unknown]; go: string}> = []
  for (const dimension of dimensions) {
    const placeholder = dimension.cases.find((candidate) => candidate.placeholder)
    if (!placeholder) continue
    if (typeof placeholder.value === 'string') strings.set(placeholder.value, dimension.go)
    else if (typeof placeholder.value === 'number') numbers.set(placeholder.value, dimension.go)
    else if (Array.isArray(placeholder.value) && dimension.sampleItems) {
      lists.push({items: dimension.sampleItems, go: listExpression(dimension, renderAt, base)})
    }
  }
  return {strings, numbers, lists, opaque}
}

/**
 * `uniq X` when the items come out deduplicated: the sample list with its first item twice is rendered and searched
 * for the items as given (`X`) or deduplicated.
 */
function listExpression(dimension: Dimension, renderAt: (assignment: Assignment) => Map<string, KubeObject> | undefined, base: Assignment): string {
  const probe = dimension.cases.findIndex((candidate) => candidate.probe)
  const duplicate = probe >= 0 ? renderAt(withCase(base, dimension.name, probe)) : undefined
  if (!duplicate) return dimension.go
  const [first, second] = dimension.sampleItems!
  const text = JSON.stringify([...duplicate.values()])
  if (text.includes(JSON.stringify([first, first, second]).slice(1, -1))) return dimension.go
  if (text.includes(JSON.stringify([first, second]).slice(1, -1))) return `(uniq ${dimension.go})`
  return dimension.go
}

/** The witness' object as it would be rendered with `to` instead of `from`: the placeholder's value put in. */
function adapt(object: unknown, from: Case, to: Case): unknown {
  if (!from.placeholder || to.value === ABSENT) return object
  if (Array.isArray(from.value) && Array.isArray(to.value)) return substituteList(object, from.value, to.value)
  if (typeof to.value === 'object') return object
  if (typeof from.value !== 'string' && typeof from.value !== 'number') return object
  return substitute(object, from.value, to.value)
}

/** `value` with each run of the sample items (a list setting's placeholder) replaced by `items`. */
export function substituteList(value: unknown, sample: readonly unknown[], items: readonly unknown[]): unknown {
  if (Array.isArray(value)) {
    const result: unknown[] = []
    for (let index = 0; index < value.length; index++) {
      if (sample.length > 0 && sample.every((item, offset) => deepEqual(value[index + offset], item))) {
        result.push(...structuredClone(items))
        index += sample.length - 1
      } else {
        result.push(substituteList(value[index], sample, items))
      }
    }
    return result
  }
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, substituteList(child, sample, items)]))
  return value
}

export function substitute(value: unknown, token: string | number, replacement: unknown): unknown {
  if (value === token) return replacement
  if (typeof value === 'string') return value.split(String(token)).join(String(replacement))
  if (Array.isArray(value)) return value.map((item) => substitute(item, token, replacement))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, child]) => [substitute(key, token, replacement) as string, substitute(child, token, replacement)]))
  }
  return value
}

/** Paths where two values differ: a key present in one only, a list of another length, another scalar. */
export function differences(a: unknown, b: unknown, path: Path = []): Path[] {
  if (deepEqual(a, b)) return []
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    return a.flatMap((item, index) => differences(item, b[index], [...path, index]))
  }
  if (isMap(a) && isMap(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])]
    return keys.flatMap((key) => (Object.hasOwn(a, key) && Object.hasOwn(b, key) ? differences(a[key], b[key], [...path, key]) : [[...path, key]]))
  }
  return [path]
}

export function valueAt(value: unknown, path: readonly (string | number)[]): unknown {
  let current: unknown = value
  for (const step of path) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, step)) return ABSENT
    current = (current as Record<string | number, unknown>)[step]
  }
  return current
}

function isPrefix(prefix: readonly (string | number)[], path: readonly (string | number)[]): boolean {
  return prefix.length <= path.length && prefix.every((step, index) => step === path[index])
}

function uniquePaths(paths: readonly Path[]): Path[] {
  const seen = new Set<string>()
  return paths.filter((path) => {
    const id = JSON.stringify(path)
    if (seen.has(id)) return false
    seen.add(id)
    return true
  })
}

interface CaseClass {
  cases: number[]
  /** The case rendered for the class (its placeholder if it has one). */
  representative: number
}

/**
 * A dimension's cases grouped by what they render at `path` (with the others at the witness): cases that render like
 * the placeholder (its value put in) join its class. Cases whose rendering is invalid or lacks the object are left out.
 */
function classesAt(dimension: Dimension, at: Assignment, key: string, path: Path, renderAt: (assignment: Assignment) => Map<string, KubeObject> | undefined): CaseClass[] {
  const valueOf = (index: number) => {
    const object = renderAt(withCase(at, dimension.name, index))?.get(key)
    return object === undefined ? undefined : {value: valueAt(object, path)}
  }
  const classes: Array<CaseClass & {value: unknown}> = []
  const placeholder = dimension.cases.findIndex((candidate) => candidate.placeholder)
  const placeholderValue = placeholder >= 0 ? valueOf(placeholder) : undefined
  if (placeholderValue) classes.push({cases: [placeholder], representative: placeholder, value: placeholderValue.value})
  dimension.cases.forEach((candidate, index) => {
    if (index === placeholder || candidate.probe) return
    const rendered = valueOf(index)
    if (!rendered) return
    const ph = dimension.cases[placeholder]
    if (placeholderValue && ph && candidate.value !== ABSENT && deepEqual(adapt(placeholderValue.value, ph, candidate), rendered.value) &&
      (typeof candidate.value !== 'object' || Array.isArray(candidate.value))) {
      classes[0]!.cases.push(index)
      return
    }
    const same = classes.find((existing) => !existing.cases.includes(placeholder) && deepEqual(existing.value, rendered.value))
    if (same) same.cases.push(index)
    else classes.push({cases: [index], representative: index, value: rendered.value})
  })
  return classes
}

/** The Go condition of a class: its cases' conditions, or for the placeholder's class: none of the other classes'. */
function classCondition(dimension: Dimension, cls: CaseClass, all: readonly CaseClass[]): string {
  if (cls.cases.some((index) => dimension.cases[index]!.placeholder)) {
    const others = all.filter((other) => other !== cls).flatMap((other) => other.cases.map((index) => dimension.cases[index]!.cond))
    const covered = dimension.cases.filter((candidate, index) => !all.some((c) => c.cases.includes(index)) && !candidate.placeholder && !candidate.probe).map((candidate) => candidate.cond)
    const excluded = [...others, ...covered]
    return excluded.length === 0 ? 'true' : `not ${or(excluded)}`
  }
  return or(cls.cases.map((index) => dimension.cases[index]!.cond))
}

function or(conditions: readonly string[]): string {
  const unique = [...new Set(conditions)]
  return unique.length === 1 ? wrap(unique[0]!) : `(or ${unique.map(wrap).join(' ')})`
}

function and(conditions: readonly string[]): string {
  const unique = [...new Set(conditions.filter((condition) => condition !== 'true'))]
  if (unique.length === 0) return 'true'
  return unique.length === 1 ? unique[0]! : `and ${unique.map(wrap).join(' ')}`
}

function wrap(condition: string): string {
  return /^\(.*\)$/.test(condition) || !/\s/.test(condition) ? condition : `(${condition})`
}

function* combinations(lists: ReadonlyArray<readonly CaseClass[]>): Generator<CaseClass[]> {
  if (lists.length === 0) {
    yield []
    return
  }
  const [first, ...rest] = lists
  for (const cls of first!) for (const tail of combinations(rest)) yield [cls, ...tail]
}

/** The branches of the subtree at `path`: one per distinct rendering over the combinations of the deciding settings' classes. */
function branchesAt(
  path: Path, deciding: readonly Dimension[], at: Assignment, key: string,
  renderAt: (assignment: Assignment) => Map<string, KubeObject> | undefined, placeholders: Placeholders, maxCombinations: number,
): Array<{cond: string; node: TemplateNode | Absent}> {
  const classes = deciding.map((dimension) => classesAt(dimension, at, key, path, renderAt))
  const count = classes.reduce((product, list) => product * list.length, 1)
  if (count > maxCombinations) {
    throw new ChartCompileError(`${key} at ${path.join('.')}: ${count} combinations of ${deciding.map((dimension) => dimension.name).join(', ')} (more than ${maxCombinations}): the chart compiler needs each part of an object to depend on a few settings — make the object vary in smaller parts (e.g. one ClusterRole per feature instead of one whose rules merge every enabled feature's)`)
  }
  const groups: Array<{conds: string[]; node: TemplateNode | Absent; id: string; witness: boolean}> = []
  for (const combination of combinations(classes)) {
    let assignment = at
    combination.forEach((cls, index) => (assignment = withCase(assignment, deciding[index]!.name, cls.representative)))
    const object = renderAt(assignment)?.get(key)
    if (!object) continue
    const value = valueAt(object, path)
    const node = value === ABSENT ? ABSENT : toTemplate(value, placeholders)
    const id = node === ABSENT ? 'absent' : JSON.stringify(node)
    const cond = and(combination.map((cls, index) => classCondition(deciding[index]!, cls, classes[index]!)))
    const isWitness = combination.every((cls, index) => cls.cases.includes(at.get(deciding[index]!.name)!))
    const group = groups.find((existing) => existing.id === id)
    if (group) {
      group.conds.push(cond)
      group.witness ||= isWitness
    } else {
      groups.push({conds: [cond], node, id, witness: isWitness})
    }
  }
  // The witness' branch last (written as else when every branch writes something).
  groups.sort((a, b) => Number(a.witness) - Number(b.witness))
  return groups.map((group) => ({cond: group.conds.length === 1 ? group.conds[0]! : or(group.conds), node: group.node}))
}

/**
 * Branches that are all lists become one list whose items carry conditions: the items of every branch in one
 * sequence (each branch's items in their order: a common supersequence by longest common subsequences), an item
 * shared by every branch without a condition, another under the conditions of the branches that hold it. A port
 * that only the DNS01 webhook adds is then one conditional item, not a second copy of the list.
 */
export function mergeListBranches(branches: ReadonlyArray<{cond: string; node: TemplateNode | Absent}>): TemplateNode {
  const lists = branches.map((branch) => branch.node)
  if (branches.length < 2 || !lists.every((node): node is Extract<TemplateNode, {t: 'list'}> => node !== ABSENT && node.t === 'list')) return {t: 'cond', branches: [...branches]}
  let merged: Array<{node: TemplateNode; id: string; in: Set<number>}> = lists[0]!.items.map((node) => ({node, id: JSON.stringify(node), in: new Set([0])}))
  lists.slice(1).forEach((list, offset) => {
    const index = offset + 1
    const items = list.items.map((node) => ({node, id: JSON.stringify(node)}))
    // Longest common subsequence of the merged sequence and this branch's items, then the two interleaved.
    const lengths = Array.from({length: merged.length + 1}, () => Array<number>(items.length + 1).fill(0))
    for (let i = merged.length - 1; i >= 0; i--) {
      for (let j = items.length - 1; j >= 0; j--) {
        lengths[i]![j] = merged[i]!.id === items[j]!.id ? lengths[i + 1]![j + 1]! + 1 : Math.max(lengths[i + 1]![j]!, lengths[i]![j + 1]!)
      }
    }
    const next: typeof merged = []
    let i = 0
    let j = 0
    while (i < merged.length || j < items.length) {
      if (i < merged.length && j < items.length && merged[i]!.id === items[j]!.id) {
        next.push({...merged[i]!, in: new Set([...merged[i]!.in, index])})
        i++
        j++
      } else if (j >= items.length || (i < merged.length && lengths[i + 1]![j]! >= lengths[i]![j + 1]!)) {
        next.push(merged[i++]!)
      } else {
        next.push({...items[j++]!, in: new Set([index])})
      }
    }
    merged = next
  })
  return {
    t: 'list',
    items: merged.map((item) => {
      if (item.in.size === branches.length) return item.node
      const holding = [...item.in].map((index) => branches[index]!.cond)
      return {t: 'cond', branches: [{cond: holding.length === 1 ? holding[0]! : or(holding), node: item.node}, {cond: 'false', node: ABSENT}]}
    }),
  }
}

/** The renderings that hold the subtree at `path` (to place a subtree the witness lacks where the others have it). */
function branchesSource(path: Path, deciding: readonly Dimension[], at: Assignment, key: string, renderAt: (assignment: Assignment) => Map<string, KubeObject> | undefined): unknown[] {
  const sources: unknown[] = []
  for (const dimension of deciding) {
    dimension.cases.forEach((candidate, index) => {
      if (candidate.probe) return
      const object = renderAt(withCase(at, dimension.name, index))?.get(key)
      if (object && valueAt(object, path) !== ABSENT) sources.push(object)
    })
  }
  return sources
}

/** The condition under which the object exists, over the combinations of the settings that decide it. */
function presenceCondition(deciding: readonly Dimension[], at: Assignment, key: string, renderAt: (assignment: Assignment) => Map<string, KubeObject> | undefined, maxCombinations: number): string {
  const classes = deciding.map((dimension) => {
    const present: number[] = []
    const absent: number[] = []
    dimension.cases.forEach((candidate, index) => {
      if (candidate.probe) return
      const rendered = renderAt(withCase(at, dimension.name, index))
      if (!rendered) return
      ;(rendered.has(key) ? present : absent).push(index)
    })
    const placeholder = dimension.cases.findIndex((candidate) => candidate.placeholder)
    const representative = (cases: number[]) => (cases.includes(placeholder) ? placeholder : cases[0]!)
    return [present, absent].filter((cases) => cases.length > 0).map((cases) => ({cases, representative: representative(cases)}))
  })
  const count = classes.reduce((product, list) => product * list.length, 1)
  if (count > maxCombinations) throw new ChartCompileError(`${key}: ${count} combinations of ${deciding.map((dimension) => dimension.name).join(', ')} decide whether it exists`)
  const conds: string[] = []
  for (const combination of combinations(classes)) {
    let assignment = at
    combination.forEach((cls, index) => (assignment = withCase(assignment, deciding[index]!.name, cls.representative)))
    if (renderAt(assignment)?.has(key)) conds.push(and(combination.map((cls, index) => classCondition(deciding[index]!, cls, classes[index]!))))
  }
  if (conds.length === 0) throw new ChartCompileError(`${key}: no combination renders it`)
  return conds.length === 1 ? conds[0]! : or(conds)
}

/**
 * The template with the subtree at `path` replaced by `node`; where the witness lacks it, inserted after the entry
 * that precedes it in a rendering that has it.
 */
function insertAt(template: TemplateNode, object: unknown, path: Path, node: TemplateNode, sources: readonly unknown[]): TemplateNode {
  if (path.length === 0) return node
  const [step, ...rest] = path
  if (template.t === 'list' && typeof step === 'number') {
    const items = [...template.items]
    items[step] = insertAt(items[step]!, (object as unknown[])[step], rest, node, sources.map((source) => valueAt(source, [step])))
    return {...template, items}
  }
  if (template.t === 'map' && typeof step === 'string') {
    const entries = [...template.entries]
    const index = entries.findIndex(([, , key]) => key === step)
    if (index >= 0) {
      const [parts, child, key] = entries[index]!
      entries[index] = [parts, insertAt(child, (object as Record<string, unknown>)[step], rest, node, sources.map((source) => valueAt(source, [step]))), key]
      return {...template, entries}
    }
    if (rest.length > 0) throw new ChartCompileError(`cannot place a branch at ${path.join('.')}`)
    const source = sources.find((candidate) => candidate !== null && typeof candidate === 'object' && Object.hasOwn(candidate, step)) as Record<string, unknown> | undefined
    const order = source ? Object.keys(source) : []
    const keys = entries.map(([, , key]) => key)
    const before = order.slice(0, Math.max(0, order.indexOf(step))).filter((key) => keys.includes(key))
    const position = before.length > 0 ? keys.indexOf(before.at(-1)!) + 1 : 0
    entries.splice(position, 0, [[{lit: step}], node, step])
    return {...template, entries}
  }
  throw new ChartCompileError(`cannot place a branch at ${path.join('.')} in a ${template.t}`)
}

/** The form of every placeholder token (see chart.ts): any left in literal text is an error. */
const TOKEN = /zq\d+qz|ZQ\d+QZ/g

/** Placeholders (tokens, sentinels, list items) left in the template's literal text: the settings they belong to. */
function leftoverTokens(template: TemplateNode, dimensions: readonly Dimension[]): string[] {
  const text = JSON.stringify(literalText(template))
  const found = new Set<string>()
  const claimed = new Set<string>()
  for (const dimension of dimensions) {
    const placeholder = dimension.cases.find((candidate) => candidate.placeholder)
    if (!placeholder) continue
    const tokens = [...JSON.stringify(placeholder.value).matchAll(TOKEN)].map((match) => match[0])
    tokens.forEach((token) => claimed.add(token))
    if (typeof placeholder.value === 'number') tokens.push(String(placeholder.value))
    if (tokens.some((token) => text.includes(token))) found.add(dimension.name)
  }
  for (const [token] of text.matchAll(TOKEN)) if (!claimed.has(token)) found.add(`(placeholder ${token})`)
  return [...found]
}

/** The literal parts of a template (keys, strings, numbers), without its expressions. */
function literalText(node: TemplateNode | Absent): unknown {
  if (node === ABSENT) return null
  switch (node.t) {
    case 'lit': return node.value
    case 'str': return node.parts.map((part) => ('lit' in part ? part.lit : '')).join('|')
    case 'num': case 'json': return null
    case 'splice': return [node.before, node.after]
    case 'map': return node.entries.map(([key, value]) => [key.map((part) => ('lit' in part ? part.lit : '')).join('|'), literalText(value)])
    case 'list': return node.items.map(literalText)
    case 'cond': return node.branches.map((branch) => literalText(branch.node))
  }
}

function isMap(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}
