import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { SharedMemos, type SharedMemo } from '../../core/db/shared-memos.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import type { ProviderKind } from '../../core/ports/inference.ts';

/** A scope: an org, or the system (null). */
export type ScopeId = string | null;

export interface TargetRow {
  id: string;
  org_id: string | null;
  name: string;
  kind: ProviderKind;
  base_url: string;
  credential_secret: string | null;
  allowed_models: string[];
  request_timeout_ms: number | null;
  idle_timeout_ms: number | null;
  /** An openai target whose upstream also serves the Responses API: Responses calls pass through. */
  responses_api: boolean;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export const PRICE_KEYS = ['input', 'output', 'cache_read', 'cache_write', 'reasoning'] as const;
export type PriceKey = (typeof PRICE_KEYS)[number];

export interface ModelRow {
  id: string;
  org_id: string | null;
  name: string;
  target_id: string;
  upstream_model: string;
  description: string | null;
  input_price: string | null;
  output_price: string | null;
  cache_read_price: string | null;
  cache_write_price: string | null;
  reasoning_price: string | null;
  project_ids: string[] | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export type ModelWithTarget = ModelRow & { target: TargetRow };

export interface UsageRow {
  org_id: string | null;
  project_id: string | null;
  job_id: string | null;
  attempt_id: string | null;
  principal_kind: string;
  principal_id: string;
  target_id: string | null;
  provider_kind: ProviderKind;
  model: string;
  upstream_model: string;
  stream: boolean;
  status: number;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
  latency_ms: number;
  first_byte_ms: number | null;
}

/** The scopes a caller sees: its org's rows (when it has one) and the system's. */
const inScopes = (query: ReturnType<Db>, table: string, orgId: ScopeId) =>
  query.where((w) => {
    w.whereNull(`${table}.org_id`);
    if (orgId) w.orWhere(`${table}.org_id`, orgId);
  });

/** The org's rows only (or the system's), for the admin lists and writes. */
const ofScope = (query: ReturnType<Db>, table: string, orgId: ScopeId) => (orgId ? query.where(`${table}.org_id`, orgId) : query.whereNull(`${table}.org_id`));

/** A memo key for a lookup by name in a scope: no spaces (SharedMemo's rule), the name's own characters escaped. */
const lookupKey = (kind: string, name: string, orgId: ScopeId) => `${kind}|${orgId ?? ''}|${encodeURIComponent(name)}`;

@injectable()
export class InferenceRepository {
  /**
   * The lookups every gateway call makes (a model's target by name), remembered per process: any
   * write to targets or models forgets them all, here and, by notice, in the other processes.
   */
  private readonly lookups: SharedMemo<unknown>;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(SharedMemos) memos: SharedMemos,
  ) {
    this.lookups = memos.memo('inference-lookups', /^\s*(?:insert\s+into|update|delete\s+from)\s+"?inference_(?:targets|models)"?[\s(]/i);
  }

  private remembered<V>(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    return this.lookups.get(key, load) as Promise<V | undefined>;
  }

  listTargets(orgId: ScopeId, query: ListQuery): Promise<Page<TargetRow>> {
    return paginate<TargetRow, TargetRow>(ofScope(this.db('inference_targets'), 'inference_targets', orgId), query, (r) => r, 'inference_targets');
  }

  target(id: string, db: Db = this.db): Promise<TargetRow | undefined> {
    return db('inference_targets').where({ id }).first();
  }

  /** A target by name, the org's before the system's. */
  targetNamed(name: string, orgId: ScopeId): Promise<TargetRow | undefined> {
    return this.remembered(lookupKey('target', name, orgId), () =>
      inScopes(this.db('inference_targets').where({ name }), 'inference_targets', orgId).orderByRaw('org_id IS NULL').first(),
    );
  }

  /** Targets the scope sees whose allowed models list `model`, the org's first, then by name. */
  async targetsAllowing(model: string, orgId: ScopeId): Promise<TargetRow[]> {
    const rows = await this.remembered<TargetRow[]>(lookupKey('allowing', model, orgId), () =>
      inScopes(this.db('inference_targets').whereRaw('? = ANY(allowed_models)', [model]), 'inference_targets', orgId).orderByRaw('org_id IS NULL, name'),
    );
    return rows ?? [];
  }

  async insertTarget(row: Omit<TargetRow, 'created_at' | 'updated_at'>): Promise<TargetRow> {
    const [created] = await this.db('inference_targets').insert(row).returning('*');
    this.lookups.changedAll(this.db);
    return created;
  }

  async updateTarget(id: string, changes: Partial<TargetRow>): Promise<TargetRow> {
    const [updated] = await this.db('inference_targets')
      .where({ id })
      .update({ ...changes, updated_at: this.db.fn.now() })
      .returning('*');
    this.lookups.changedAll(this.db);
    return updated;
  }

  async deleteTarget(id: string): Promise<void> {
    await this.db('inference_targets').where({ id }).delete();
    this.lookups.changedAll(this.db);
  }

  modelsUsingTarget(targetId: string): Promise<string[]> {
    return this.db('inference_models').where({ target_id: targetId }).orderBy('name').pluck('name');
  }

  /** The managed models a scope sees (its own and the system's, or with `own` its own only), with their targets, newest first. */
  async listModels(
    orgId: ScopeId,
    query: Pick<ListQuery, 'limit' | 'offset'>,
    opts: { own?: boolean; projectId?: string | null } = {},
  ): Promise<Page<ModelWithTarget>> {
    const { own = false, projectId = null } = opts;
    const base = this.db('inference_models');
    // A project-bound caller sees only the entries its project may use.
    if (projectId) base.where((w) => w.whereNull('inference_models.project_ids').orWhereRaw('? = ANY(inference_models.project_ids)', [projectId]));
    const scoped = own ? ofScope(base, 'inference_models', orgId) : inScopes(base, 'inference_models', orgId);
    const page = await paginate<ModelRow, ModelRow>(scoped, query, (r) => r, 'inference_models');
    return { ...page, data: await this.withTargets(page.data) };
  }

  /**
   * The system's managed models and those of the orgs `narrow` keeps (a visibility filter on the
   * `org_id` column), at most `limit`, by name.
   */
  async modelsOfOrgsAndSystem(narrow: (q: ReturnType<Db>) => ReturnType<Db>, limit: number): Promise<ModelWithTarget[]> {
    const rows: ModelRow[] = await this.db('inference_models')
      .where((w) => w.whereNull('inference_models.org_id').orWhere((v) => narrow(v)))
      .orderBy(['name', 'org_id'])
      .limit(limit);
    return this.withTargets(rows);
  }

  /** A managed model by name, the org's entry before the system's. */
  modelNamed(name: string, orgId: ScopeId): Promise<ModelWithTarget | undefined> {
    return this.remembered(lookupKey('model', name, orgId), async () => {
      const row: ModelRow | undefined = await inScopes(this.db('inference_models').where({ name }), 'inference_models', orgId)
        .orderByRaw('org_id IS NULL')
        .first();
      return row ? (await this.withTargets([row]))[0] : undefined;
    });
  }

  /** The scope's own entry of that name (for writes). */
  async ownModel(name: string, orgId: ScopeId): Promise<ModelWithTarget | undefined> {
    const row: ModelRow | undefined = await ofScope(this.db('inference_models').where({ name }), 'inference_models', orgId).first();
    return row ? (await this.withTargets([row]))[0] : undefined;
  }

  async insertModel(row: Omit<ModelRow, 'created_at' | 'updated_at'>): Promise<ModelWithTarget> {
    const [created] = await this.db('inference_models').insert(row).returning('*');
    this.lookups.changedAll(this.db);
    return (await this.withTargets([created]))[0];
  }

  async deleteModel(id: string): Promise<void> {
    await this.db('inference_models').where({ id }).delete();
    this.lookups.changedAll(this.db);
  }

  async recordUsage(row: UsageRow): Promise<void> {
    await this.db('inference_usage').insert(row);
  }

  private async withTargets(rows: ModelRow[]): Promise<ModelWithTarget[]> {
    if (rows.length === 0) return [];
    const targets: TargetRow[] = await this.db('inference_targets').whereIn('id', [...new Set(rows.map((r) => r.target_id))]);
    const byId = new Map(targets.map((t) => [t.id, t]));
    return rows.map((r) => ({ ...r, target: byId.get(r.target_id)! }));
  }
}
