/**
 * Idempotent create: look the object up by its natural key and adopt it;
 * create it only when nothing matches; a 409 on create means "it exists" (the contract asks the operator to read
 * it so), so look it up again and adopt that one. A crash between "API create" and "status write", or a POST whose
 * answer got lost and was retried, therefore never makes a duplicate.
 *
 * `signal` cancels the whole sequence: it goes into every list and create request (so an already aborted signal
 * sends nothing), and a delay between post-409 lookups ends at once when it aborts, the next lookup then rejecting
 * with what the request throws: an ApiNetworkError whose cause is `aborted`.
 */
import {pause, systemClock, type Clock} from '../lib/clock.js'
import {ApiConflictError} from './errors.js'
import type {CallOptions, Filters} from './resources.js'

/** What adoptOrCreate needs of a resource (every `Resource` has it). */
export interface AdoptableResource<T, CreateBody> {
  readonly collection?: string
  list(filters?: Filters, options?: CallOptions): AsyncIterable<T>
  create(body: CreateBody, options?: CallOptions): Promise<T>
}

export interface AdoptOrCreateOptions<T, CreateBody> {
  /** The natural key as list filters, e.g. `{name_exact: 'web', k8s_cluster: clusterId}` or `{workspaces: wsId}`. */
  lookup: Filters
  body: CreateBody
  /** Narrows the lookup's candidates further (e.g. same namespace); the first candidate that passes is adopted. */
  matches?: (candidate: T) => boolean
  /** Lookups after a 409 before giving up (the racing create may not be visible yet). Default 5. */
  conflictLookups?: number
  /** Delay before the second post-409 lookup, doubling after each. Default 100 ms. */
  conflictLookupDelayMs?: number
  /** Cancels the lookups, the create and the post-409 delays (ApiNetworkError with cause `aborted`). */
  signal?: AbortSignal
  /** The clock of the post-409 delays (the caller's; the system clock by default). */
  clock?: Clock
  /**
   * Create without the first lookup: the caller knows the key to be absent (e.g. from an inventory listing). Only
   * safe where the API enforces the key as unique, so that a wrong "absent" gets a 409 and the lookups after it.
   */
  skipLookup?: boolean
}

export interface AdoptOrCreateResult<T> {
  object: T
  /** true when this call created the object; false when an existing one was adopted. */
  created: boolean
}

export async function adoptOrCreate<T, CreateBody>(
  resource: AdoptableResource<T, CreateBody>,
  options: AdoptOrCreateOptions<T, CreateBody>,
): Promise<AdoptOrCreateResult<T>> {
  const {signal} = options
  const callOptions: CallOptions = {signal}
  const find = () => findExisting(resource, options)

  const existing = options.skipLookup ? undefined : await find()
  if (existing !== undefined) return {object: existing, created: false}

  try {
    return {object: await resource.create(options.body, callOptions), created: true}
  } catch (error) {
    if (!(error instanceof ApiConflictError)) throw error
    const lookups = Math.max(1, options.conflictLookups ?? 5)
    let delay = options.conflictLookupDelayMs ?? 100
    for (let i = 0; i < lookups; i++) {
      if (i > 0) {
        await pause(options.clock ?? systemClock, delay, signal)
        delay *= 2
      }
      const found = await find()
      if (found !== undefined) return {object: found, created: false}
    }
    const key = Object.entries(options.lookup).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`).join(', ')
    throw new ApiConflictError(
      {status: 409, method: error.method, path: error.path, type: error.type, errors: error.errors, attempts: error.attempts},
      `${error.message}; but no existing object matches the lookup (${key})${options.matches ? ' and the match rule' : ''} after ${lookups} lookup${lookups === 1 ? '' : 's'}: the natural key and the API's unique constraint disagree`,
    )
  }
}

/** The first object the natural key (`lookup`, narrowed by `matches`) finds, if any. */
export async function findExisting<T>(
  resource: Pick<AdoptableResource<T, unknown>, 'list'>,
  options: Pick<AdoptOrCreateOptions<T, unknown>, 'lookup' | 'matches' | 'signal'>,
): Promise<T | undefined> {
  for await (const candidate of resource.list(options.lookup, {signal: options.signal})) {
    if (!options.matches || options.matches(candidate)) return candidate
  }
  return undefined
}
