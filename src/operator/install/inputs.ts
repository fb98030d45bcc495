/**
 * The rules every input of `install`, `uninstall`, `manifests`, `status` and `info` follows, whether it comes from a
 * flag (`--namespace`, `--image`, `--replicas`) or from the block values (`namespace`, `image_registry`,
 * `image_name`, `image_tag`, `deployment.replicas`): one function per kind of input, each returning the problem as
 * text (undefined when the value is fine). Pure; the messages say what a valid value looks like.
 *
 * Image references follow the grammar of the distribution project (github.com/distribution/reference, the one
 * docker, containerd and the kubelet parse): `[domain[:port]/]path[:tag][@digest]`.
 */

/** A DNS-1123 label: what a namespace name must be. */
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

/** distribution/reference: one path component (lower case, separators `.`, `_`, `__`, runs of `-`). */
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*'
/** distribution/reference: a domain component; a domain is components joined by dots, with an optional port. */
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])'
const IPV6 = '\\[(?:[a-fA-F0-9:]+)\\]'
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|${IPV6})(?::[0-9]+)?`
const TAG = '[\\w][\\w.-]{0,127}'
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}'

const PATH_RE = new RegExp(`^${PATH_COMPONENT}(?:/${PATH_COMPONENT})*$`)
const DOMAIN_RE = new RegExp(`^${DOMAIN}$`)
const TAG_RE = new RegExp(`^${TAG}$`)
const REFERENCE_RE = new RegExp(`^(?:(${DOMAIN})/)?(${PATH_COMPONENT}(?:/${PATH_COMPONENT})*)(?::(${TAG}))?(?:@(${DIGEST}))?$`)
/** distribution/reference's NameTotalLengthMax. */
const MAX_NAME_LENGTH = 255

const NAMESPACE_HINT = 'a namespace name is lower case letters, digits and "-", starts and ends with a letter or digit, at most 63 characters (e.g. polycrate)'
const IMAGE_HINT = 'an image reference is [registry[:port]/]name[:tag][@sha256:digest] with a lower-case name, e.g. cargo.ayedo.cloud/library/polycrate:0.1.0'

/** Why `name` is not a namespace name (undefined when it is one). */
export function namespaceProblem(name: string): string | undefined {
  if (name === '') return `must not be empty: ${NAMESPACE_HINT}`
  if (name.length > 63 || !DNS1123_LABEL.test(name)) return `"${name}" is not a valid namespace name: ${NAMESPACE_HINT}`
  return undefined
}

/** Why `reference` is not an image reference by the distribution grammar (undefined when it is one). */
export function imageReferenceProblem(reference: string): string | undefined {
  if (reference.trim() === '') return `must not be empty: ${IMAGE_HINT}`
  const match = REFERENCE_RE.exec(reference)
  if (!match) {
    if (/\s/.test(reference)) return `"${reference}" contains white space: ${IMAGE_HINT}`
    if (/[A-Z]/.test(reference.split('/').slice(1).join('/') || reference)) return `"${reference}" has upper-case letters in its name: ${IMAGE_HINT}`
    return `"${reference}" is not an image reference: ${IMAGE_HINT}`
  }
  const name = `${match[1] ? `${match[1]}/` : ''}${match[2]}`
  if (name.length > MAX_NAME_LENGTH) return `"${reference}": the repository name is longer than ${MAX_NAME_LENGTH} characters`
  return undefined
}

/** Why `registry` is not a registry host (`host[:port]`, as in image_registry) — undefined when it is one. */
export function registryProblem(registry: string): string | undefined {
  if (registry === '') return 'must not be empty: a registry host such as cargo.ayedo.cloud or registry.example.com:5000'
  if (!DOMAIN_RE.test(registry)) return `"${registry}" is not a registry host: expected a host name with an optional port, e.g. cargo.ayedo.cloud or registry.example.com:5000`
  return undefined
}

/** Why `name` is not an image repository path (as in image_name) — undefined when it is one. */
export function imageNameProblem(name: string): string | undefined {
  if (name === '') return 'must not be empty: a repository path such as library/polycrate'
  if (!PATH_RE.test(name)) return `"${name}" is not a repository path: lower-case components separated by "/", each of letters, digits, ".", "_" and "-" (e.g. library/polycrate)`
  return undefined
}

/** Why `tag` is not an image tag (as in image_tag) — undefined when it is one. */
export function imageTagProblem(tag: string): string | undefined {
  if (!TAG_RE.test(tag)) return `"${tag}" is not an image tag: letters, digits, "_", "." and "-", not starting with "." or "-", at most 128 characters (e.g. 0.57.1)`
  return undefined
}

/** Why `replicas` is not a replica count the operator can run with (undefined when it is one). */
export function replicasProblem(replicas: number): string | undefined {
  if (!Number.isInteger(replicas)) return `${replicas} is not a whole number of replicas`
  if (replicas < 1) return `${replicas}: at least 1 replica (the operator is removed with \`polycrate operator uninstall\`, not by scaling it to 0)`
  return undefined
}

/** The inputs a command takes as flags (each optional: only those given are checked). */
export interface FlagInputs {
  namespace?: string
  image?: string
  replicas?: number
  operatorNamespace?: string
}

/**
 * Every problem of the flags, as `--flag: problem` lines (pure). The same rules as the values (see values.ts), so a
 * flag never accepts what the values refuse.
 */
export function flagProblems(inputs: FlagInputs): string[] {
  const problems: string[] = []
  const check = (flag: string, value: unknown, rule: (value: never) => string | undefined) => {
    if (value === undefined) return
    const problem = rule(value as never)
    if (problem) problems.push(`--${flag}: ${problem}`)
  }
  check('namespace', inputs.namespace, namespaceProblem)
  check('operator-namespace', inputs.operatorNamespace, namespaceProblem)
  check('image', inputs.image, imageReferenceProblem)
  check('replicas', inputs.replicas, replicasProblem)
  return problems
}

/** What a values file held before it was parsed: nothing, only comments, or something. */
export type ValuesText = 'empty' | 'comments-only' | 'content'

/** Whether a values file is empty or holds only comments and blank lines (pure; YAML's `#` comments). */
export function valuesTextKind(text: string): ValuesText {
  if (text.trim() === '') return 'empty'
  const meaningful = text.split(/\r?\n/).some((line) => {
    const trimmed = line.trim()
    return trimmed !== '' && !trimmed.startsWith('#') && trimmed !== '---' && trimmed !== '...'
  })
  return meaningful ? 'content' : 'comments-only'
}

/** The message for an empty (or comment-only) values file: the likely cause (a secrets file not decrypted) and the way out. */
export function emptyValuesMessage(file: string, kind: Exclude<ValuesText, 'content'>): string {
  const what = kind === 'empty' ? 'is empty' : 'holds only comments'
  const secrets = /secrets?\.poly$/i.test(file) ? ' — did secrets.poly fail to decrypt? (`polycrate secrets decrypt`)' : ' — was it meant to hold the block\'s config:? (a secrets file that failed to decrypt looks like this)'
  return `values file ${file} ${what}${secrets}. Refusing to use the defaults in its place; pass --allow-empty if the defaults are what you want.`
}
