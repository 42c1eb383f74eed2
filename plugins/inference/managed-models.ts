import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { newId } from '../../core/ids.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import { MANAGED_PREFIX } from '../../core/ports/inference.ts';
import { InferenceRepository, PRICE_KEYS, type ModelWithTarget, type PriceKey } from './repository.ts';
import { Scopes, type ScopeHint } from './scopes.ts';

export interface ManagedModelInput {
  org_id?: string | null;
  name: string;
  target_id: string;
  upstream_model: string;
  description?: string | null;
  /** USD per million tokens. */
  prices?: Partial<Record<PriceKey, number | null>>;
  project_ids?: string[] | null;
}

/** `managed/<name>` or the bare name. */
export const managedName = (canonical: string) => (canonical.startsWith(MANAGED_PREFIX) ? canonical.slice(MANAGED_PREFIX.length) : canonical);

/** The managed-model catalog: `managed/<name>` → a target and an upstream model, with prices and the projects allowed. */
@injectable()
export class ManagedModelService {
  constructor(
    @inject(InferenceRepository) private readonly repo: InferenceRepository,
    @inject(Scopes) private readonly scopes: Scopes,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  /** What the caller's scope sees: its org's entries and the system's (only the system's without an org). */
  async list(principal: Principal, hint: ScopeHint, query: ListQuery): Promise<Page<ModelWithTarget>> {
    const scope = await this.scopes.of(principal, hint, 'inference:use');
    return this.repo.listModels(scope.orgId, query, { projectId: scope.projectId });
  }

  async create(principal: Principal, input: ManagedModelInput): Promise<ModelWithTarget> {
    const orgId = input.org_id ?? null;
    await this.scopes.admin(principal, orgId);
    const target = await this.repo.target(input.target_id);
    // An org entry may use its org's targets or the system's; a system entry only the system's.
    if (!target || (target.org_id !== null && target.org_id !== orgId))
      throw Boom.badData(`inference target ${input.target_id} not found in ${orgId ? `org ${orgId} or the system` : 'the system'}`);
    if (target.allowed_models.length && !target.allowed_models.includes(input.upstream_model)) {
      throw Boom.badData(`inference target ${target.name} does not allow model ${input.upstream_model} (allowed: ${target.allowed_models.join(', ')})`);
    }
    if (input.project_ids?.length) await this.checkProjects(input.project_ids, orgId);
    const prices = Object.fromEntries(PRICE_KEYS.map((k) => [`${k}_price`, input.prices?.[k] ?? null]));
    try {
      return await this.repo.insertModel({
        id: newId('imod'),
        org_id: orgId,
        name: input.name,
        target_id: target.id,
        upstream_model: input.upstream_model,
        description: input.description ?? null,
        project_ids: input.project_ids ?? null,
        created_by: principal.id,
        ...(prices as Record<`${PriceKey}_price`, string | null>),
      });
    } catch (e) {
      if (isUniqueViolation(e, 'inference_models_scope_name'))
        throw Boom.conflict(`managed/${input.name} already exists in ${orgId ? `org ${orgId}` : 'the system'}`);
      throw e;
    }
  }

  async remove(principal: Principal, canonical: string, orgId: string | null): Promise<void> {
    await this.scopes.admin(principal, orgId);
    const model = await this.repo.ownModel(managedName(canonical), orgId);
    if (!model) throw Boom.notFound(`model managed/${managedName(canonical)} not found in ${orgId ? `org ${orgId}` : 'the system'}`);
    await this.repo.deleteModel(model.id);
  }

  private async checkProjects(ids: string[], orgId: string | null): Promise<void> {
    if (orgId === null) throw Boom.badData('project_ids limit an org entry to some of its projects; a system entry cannot name projects');
    const found = await this.projects.byIds(ids);
    const theirs = new Set(found.filter((p) => p.org_id === orgId && !p.deleted).map((p) => p.id));
    const missing = ids.find((id) => !theirs.has(id));
    if (missing) throw Boom.badData(`project ${missing} is not a live project of org ${orgId}`);
  }
}

/** Whether a project may use the entry (no list: every project of its scope). */
export const usableBy = (model: ModelWithTarget, projectId: string | null) =>
  !model.project_ids || (projectId !== null && model.project_ids.includes(projectId));
