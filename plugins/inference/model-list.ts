import type { Principal } from '../../core/auth/principal.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import { MANAGED_PREFIX } from '../../core/ports/inference.ts';
import type { ProviderCatalog } from './catalog.ts';
import type { InferenceRepository, ModelWithTarget } from './repository.ts';
import type { Scopes, ScopeHint } from './scopes.ts';

/** The catalog is read whole for this list; a scope with more managed entries than this shows the newest. */
const MAX_MANAGED = 1000;

export interface ModelEntry {
  id: string;
  object: 'model';
  source: 'provider' | 'config' | 'managed';
  kind: 'openai' | 'anthropic';
  provider: string | null;
  target: string | null;
  upstream_model: string;
  /** The org whose catalog holds a managed entry (null: the system's; always null for provider models). */
  org_id: string | null;
}

/**
 * `GET /models`: the managed entries the caller's scope may use first, then every provider's models.
 * Without an org or project (named, or the token's), the scope is every org the caller can see and
 * may call models in, besides the system's entries.
 */
export class ModelList {
  constructor(
    private readonly repo: InferenceRepository,
    private readonly catalog: ProviderCatalog,
    private readonly scopes: Scopes,
  ) {}

  async list(principal: Principal, hint: ScopeHint & { source?: 'provider' | 'managed' }, query: ListQuery): Promise<Page<ModelEntry>> {
    const entries: ModelEntry[] = [];
    if (hint.source !== 'provider') {
      const managed = await this.managed(principal, hint);
      for (const m of managed) {
        entries.push({
          id: `${MANAGED_PREFIX}${m.name}`,
          object: 'model',
          source: 'managed',
          kind: m.target.kind,
          provider: null,
          target: m.target.name,
          upstream_model: m.upstream_model,
          org_id: m.org_id,
        });
      }
    }
    if (hint.source !== 'managed') {
      for (const m of await this.catalog.allModels())
        entries.push({ id: m.id, object: 'model', source: m.source, kind: m.kind, provider: m.provider, target: null, upstream_model: m.id, org_id: null });
    }
    if (hint.source === 'provider') await this.scopes.of(principal, hint, 'inference:use');
    const data = entries.slice(query.offset, query.offset + query.limit);
    return {
      data,
      pagination: {
        limit: query.limit,
        offset: query.offset,
        count: data.length,
        total: entries.length,
        has_more: query.offset + data.length < entries.length,
      },
    };
  }

  private async managed(principal: Principal, hint: ScopeHint): Promise<ModelWithTarget[]> {
    const byName = (a: ModelWithTarget, b: ModelWithTarget) => a.name.localeCompare(b.name) || (a.org_id ?? '').localeCompare(b.org_id ?? '');
    if (this.scopes.pointer(principal, hint)) {
      const scope = await this.scopes.of(principal, hint, 'inference:use');
      const page = await this.repo.listModels(scope.orgId, { limit: MAX_MANAGED, offset: 0 }, { projectId: scope.projectId });
      return [...page.data].sort(byName);
    }
    const rows = await this.repo.modelsOfOrgsAndSystem(
      (q) => this.scopes.visibleOrgs(principal, q.whereNotNull('inference_models.org_id'), 'inference_models.org_id'),
      MAX_MANAGED,
    );
    const orgs = [...new Set(rows.map((r) => r.org_id).filter((id): id is string => id !== null))];
    const usable = new Set(await Promise.all(orgs.map(async (org) => ((await this.scopes.mayUse(principal, org)) ? org : null))));
    return rows.filter((r) => r.org_id === null || usable.has(r.org_id)).sort(byName);
  }
}
