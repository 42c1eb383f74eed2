import Boom from '@hapi/boom';
import { BadRequest } from '../../core/errors.ts';
import { inject, injectable } from '../../core/di.ts';
import { newId } from '../../core/ids.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { AddressGuard } from '../../core/http/address-guard.ts';
import type { ProviderKind } from '../../core/ports/inference.ts';
import { InferenceRepository, type TargetRow } from './repository.ts';
import { Scopes } from './scopes.ts';

export interface TargetInput {
  org_id?: string | null;
  name: string;
  kind: ProviderKind;
  base_url: string;
  credential_secret?: string | null;
  allowed_models?: string[];
  request_timeout_ms?: number | null;
  idle_timeout_ms?: number | null;
  responses_api?: boolean;
}

export type TargetChanges = Partial<Omit<TargetInput, 'org_id' | 'name'>>;

/** Inference targets: named upstreams of an org (inference:admin) or of the system (the system administrator). */
@injectable()
export class TargetService {
  constructor(
    @inject(InferenceRepository) private readonly repo: InferenceRepository,
    @inject(Scopes) private readonly scopes: Scopes,
    @inject(AddressGuard) private readonly guard: AddressGuard,
  ) {}

  async list(principal: Principal, orgId: string | null, query: ListQuery): Promise<Page<TargetRow>> {
    await this.scopes.admin(principal, orgId);
    return this.repo.listTargets(orgId, query);
  }

  async get(principal: Principal, id: string): Promise<TargetRow> {
    const target = await this.repo.target(id);
    if (!target || !(await this.scopes.mayAdmin(principal, target.org_id))) throw Boom.notFound(`inference target ${id} not found`);
    return target;
  }

  async create(principal: Principal, input: TargetInput): Promise<TargetRow> {
    const orgId = input.org_id ?? null;
    await this.scopes.admin(principal, orgId);
    checkResponsesApi(input.kind, input.responses_api);
    await this.checkUrl(input.base_url, orgId);
    try {
      return await this.repo.insertTarget({
        id: newId('itgt'),
        org_id: orgId,
        name: input.name,
        kind: input.kind,
        base_url: trimSlash(input.base_url),
        credential_secret: input.credential_secret ?? null,
        allowed_models: input.allowed_models ?? [],
        request_timeout_ms: input.request_timeout_ms ?? null,
        idle_timeout_ms: input.idle_timeout_ms ?? null,
        responses_api: input.responses_api ?? false,
        created_by: principal.id,
      });
    } catch (e) {
      if (isUniqueViolation(e, 'inference_targets_scope_name'))
        throw Boom.conflict(`${orgId ? `org ${orgId}` : 'the system'} already has an inference target named ${input.name}`);
      throw e;
    }
  }

  async update(principal: Principal, id: string, changes: TargetChanges): Promise<TargetRow> {
    const target = await this.get(principal, id);
    checkResponsesApi(changes.kind ?? target.kind, changes.responses_api ?? (changes.kind === 'anthropic' ? false : target.responses_api));
    if (changes.base_url !== undefined) await this.checkUrl(changes.base_url, target.org_id);
    return this.repo.updateTarget(id, { ...changes, ...(changes.base_url !== undefined ? { base_url: trimSlash(changes.base_url) } : {}) });
  }

  /** A target that managed models still map to cannot go (409 naming them). */
  async remove(principal: Principal, id: string): Promise<void> {
    const target = await this.get(principal, id);
    const users = await this.repo.modelsUsingTarget(target.id);
    if (users.length)
      throw Boom.conflict(`inference target ${target.name} is used by managed models ${users.map((n) => `managed/${n}`).join(', ')}; delete them first`);
    await this.repo.deleteTarget(id);
  }

  /** Org targets may not point at metadata, link-local or (by config) loopback and private addresses; the system's are trusted. */
  private async checkUrl(baseUrl: string, orgId: string | null): Promise<void> {
    if (orgId === null) return;
    try {
      await this.guard.check(new URL(baseUrl));
    } catch (e) {
      throw Boom.badData(`base_url is refused: ${(e as Error).message}`);
    }
  }
}

/** The Responses API is OpenAI's: an anthropic target cannot say it serves it (400 naming the field). */
function checkResponsesApi(kind: ProviderKind, responsesApi: boolean | undefined): void {
  if (responsesApi && kind !== 'openai') throw new BadRequest('responses_api applies to openai targets only');
}

const trimSlash = (url: string) => url.replace(/\/+$/, '');
