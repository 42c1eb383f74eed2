import type { Principal } from '../../core/auth/principal.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import { MANAGED_PREFIX } from '../../core/ports/inference.ts';
import type { ProviderCatalog } from './catalog.ts';
import type { InferenceRepository } from './repository.ts';
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
}

/** `GET /models`: the managed entries the caller's scope may use first, then every provider's models. */
export class ModelList {
  constructor(
    private readonly repo: InferenceRepository,
    private readonly catalog: ProviderCatalog,
    private readonly scopes: Scopes,
  ) {}

  async list(principal: Principal, hint: ScopeHint & { source?: 'provider' | 'managed' }, query: ListQuery): Promise<Page<ModelEntry>> {
    const scope = await this.scopes.of(principal, hint, 'inference:use');
    const entries: ModelEntry[] = [];
    if (hint.source !== 'provider') {
      const managed = await this.repo.listModels(scope.orgId, { limit: MAX_MANAGED, offset: 0 }, { projectId: scope.projectId });
      for (const m of [...managed.data].sort((a, b) => a.name.localeCompare(b.name))) {
        entries.push({
          id: `${MANAGED_PREFIX}${m.name}`,
          object: 'model',
          source: 'managed',
          kind: m.target.kind,
          provider: null,
          target: m.target.name,
          upstream_model: m.upstream_model,
        });
      }
    }
    if (hint.source !== 'managed') {
      for (const m of await this.catalog.allModels())
        entries.push({ id: m.id, object: 'model', source: m.source, kind: m.kind, provider: m.provider, target: null, upstream_model: m.id });
    }
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
}
