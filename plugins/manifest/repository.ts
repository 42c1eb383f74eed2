import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Batcher } from '../../core/batcher.ts';
import type { AgentsConfig, Manifest, StoredManifest } from '../../domain/manifest/types.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import { SharedMemos, type SharedMemo } from '../../core/db/shared-memos.ts';

interface ManifestRow extends StoredManifest {
  id: string;
}

export type NewManifest = Omit<StoredManifest, 'synced_at'>;

/** What job creation reads from the current manifest: `x-svc.defaults` and `x-svc.agents`. */
interface JobSettings {
  defaults: Record<string, unknown>;
  agents?: AgentsConfig;
}

const COLUMNS = ['project_id', 'manifest_hash', 'git_sha', 'ref', 'yaml', 'parsed', 'synced_at', 'synced_by'];
const strip = (row: ManifestRow | undefined): StoredManifest | null => {
  if (!row) return null;
  const { id: _id, ...stored } = row;
  return stored;
};

/** Synced manifest versions, newest last; never updated or deleted through the API. */
@injectable()
export class ManifestRepository implements ManifestReader {
  /** Each project's current `x-svc.defaults` and `x-svc.agents`, remembered per process until a new version is stored. */
  private readonly knownDefaults: SharedMemo<JobSettings>;
  /** Each project's current version (null: none synced), remembered alike: every triggered workflow reads it. */
  private readonly knownCurrent: SharedMemo<StoredManifest | null>;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(SharedMemos) memos: SharedMemos,
  ) {
    const writes = /^\s*(?:insert\s+into|update|delete\s+from)\s+"?manifests"?[\s(]/i;
    this.knownDefaults = memos.memo('manifest-defaults', writes);
    this.knownCurrent = memos.memo('manifest-current', writes);
  }

  async insert(version: NewManifest): Promise<StoredManifest> {
    const [row] = await this.db('manifests')
      .insert({ ...version, parsed: JSON.stringify(version.parsed) })
      .returning(['id', ...COLUMNS]);
    this.knownDefaults.changed(this.db, version.project_id);
    this.knownCurrent.changed(this.db, version.project_id);
    return strip(row)!;
  }

  /** A copy per caller: the remembered version is shared. */
  async current(projectId: string): Promise<StoredManifest | null> {
    const load = async () =>
      strip(
        await this.db('manifests')
          .where({ project_id: projectId })
          .orderBy('id', 'desc')
          .first(['id', ...COLUMNS]),
      );
    return structuredClone((await this.knownCurrent.get(projectId, load)) ?? null);
  }

  async byHash(projectId: string, manifestHash: string): Promise<StoredManifest | null> {
    const query = this.db('manifests').where({ project_id: projectId, manifest_hash: manifestHash });
    return strip(await query.orderBy('id', 'desc').first(['id', ...COLUMNS]));
  }

  async atSha(projectId: string, gitSha: string): Promise<StoredManifest | null> {
    return strip(
      await this.db('manifests')
        .where({ project_id: projectId, git_sha: gitSha })
        .orderBy('id', 'desc')
        .first(['id', ...COLUMNS]),
    );
  }

  async projectsWithCronTriggers(): Promise<string[]> {
    const { rows } = await this.db.raw<{ rows: { project_id: string }[] }>(
      `SELECT m.project_id FROM (SELECT DISTINCT ON (project_id) project_id, parsed FROM manifests ORDER BY project_id, id DESC) m
       WHERE jsonb_path_exists(m.parsed, '$.*.*.trigger.cron')`,
    );
    return rows.map((r) => r.project_id);
  }

  /** `x-svc.defaults` of the current manifest, `{}` without one. A copy per caller: the remembered value is shared. */
  async jobDefaults(projectId: string): Promise<Record<string, unknown>> {
    return structuredClone((await this.jobSettings(projectId)).defaults);
  }

  /** `x-svc.agents` of the current manifest (a copy), undefined without one. */
  async jobAgents(projectId: string): Promise<AgentsConfig | undefined> {
    const { agents } = await this.jobSettings(projectId);
    return agents ? structuredClone(agents) : undefined;
  }

  private async jobSettings(projectId: string): Promise<JobSettings> {
    return (await this.knownDefaults.get(projectId, () => this.settings.submit(projectId)))!;
  }

  /** Job creations at the same moment share one query for their projects' defaults and agents. */
  private readonly settings = new Batcher<string, JobSettings>(async (projectIds) => {
    const { rows } = await this.db.raw<{ rows: { project_id: string; defaults: Record<string, unknown> | null; agents: AgentsConfig | null }[] }>(
      `SELECT DISTINCT ON (project_id) project_id, parsed -> 'x-svc' -> 'defaults' AS defaults, parsed -> 'x-svc' -> 'agents' AS agents
       FROM manifests WHERE project_id = ANY(?) ORDER BY project_id, id DESC`,
      [[...new Set(projectIds)]],
    );
    const byProject = new Map(rows.map((r) => [r.project_id, { defaults: r.defaults ?? {}, ...(r.agents ? { agents: r.agents } : {}) }]));
    return projectIds.map((id) => byProject.get(id) ?? { defaults: {} });
  });

  /** The parsed form of the current manifest, or null. */
  async currentParsed(projectId: string): Promise<Manifest | null> {
    return (await this.current(projectId))?.parsed ?? null;
  }
}
