/**
 * Tokens and what they may see. Three kinds:
 * - `agent`: scoped to one workspace (its organization follows); sees that workspace's objects, its
 *   organization's DNS zones/records and downtimes, and the global artifacts; limited by the contract's
 *   agent-token permission table (models.ts `agent`).
 * - `user`: scoped to a workspace, to an organization, or (given neither) unscoped; full CRUD within its scope,
 *   but not the platform-admin-only parts (operator rollout, SystemConfig PATCH).
 * - `platform-admin`: sees and may do everything.
 */
import {randomBytes} from 'node:crypto'
import type {JsonObject, ResourceModel} from './models.js'

export type TokenKind = 'agent' | 'platform-admin' | 'user'

export interface Principal {
  kind: TokenKind
  workspaceId: string | null
  organizationId: string | null
}

export class Tokens {
  private readonly tokens = new Map<string, Principal>()
  private readonly revoked = new Set<string>()

  issue(principal: Principal): string {
    const token = `sim_${principal.kind === 'platform-admin' ? 'admin' : principal.kind}_${randomBytes(20).toString('hex')}`
    this.tokens.set(token, principal)
    return token
  }

  revoke(token: string): void {
    if (this.tokens.delete(token)) this.revoked.add(token)
  }

  lookup(token: string): Principal | undefined {
    return this.tokens.get(token)
  }

  /** Every token ever issued (revoked ones too): the request log is scrubbed of all of them. */
  everIssued(): string[] {
    return [...this.tokens.keys(), ...this.revoked]
  }
}

/** The token of an `Authorization: Bearer <token>` header; undefined when the header is missing or another scheme. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return match?.[1]
}

function includes(value: unknown, id: string): boolean {
  return Array.isArray(value) ? value.includes(id) : value === id
}

/** Whether `principal` may see `object` of collection `target` (unscoped tokens see everything). */
export function canSee(principal: Principal, target: ResourceModel, object: JsonObject): boolean {
  const {workspaceId, organizationId} = principal
  if (workspaceId === null && organizationId === null) return true
  switch (target.scope) {
    case 'global':
      return true
    case 'self':
      return workspaceId !== null ? object.id === workspaceId : object.organization === organizationId
    case 'organization':
      return object.organization === organizationId
    case 'workspace':
      return workspaceId !== null ? includes(object[target.scopeField], workspaceId) : object.organization === organizationId
  }
}
