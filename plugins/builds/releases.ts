import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { canonicalJson } from '../../domain/manifest/hash.ts';
import { Conflict, Invalid, NotFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import type { ReleaseRecord, Releases } from '../../core/ports/releases.ts';
import { BuildRepository } from './repository.ts';
import { emitReleaseCreated } from './events.ts';

export interface Release {
  id: string;
  project_id: string;
  git_sha: string;
  manifest_hash: string;
  image_digests: Record<string, string>;
  build_id: string;
  version: string | null;
  tag: string;
  created_by: string | null;
  created_at: Date;
}

export interface CreateReleaseInput {
  build_id: string;
  tag?: string;
  version?: string;
}

/** Releases: a tag per project naming the digests of one successful build. Also the Releases port. */
@injectable()
export class ReleaseService implements Releases {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(BuildRepository) private readonly builds: BuildRepository,
  ) {}

  /**
   * A release of the build under its tag. The same tag again for the same commit and the same
   * digests (a pipeline re-run, a rebuild that reused its images) answers the existing release
   * (`created: false`); a tag taken by anything else is 409 saying what differs.
   */
  async create(projectId: string, input: CreateReleaseInput, principal: Principal): Promise<Release & { created: boolean }> {
    const spec = await this.builds.spec(input.build_id);
    if (!spec || spec.project_id !== projectId) throw new NotFound(`build ${input.build_id} not found in project ${projectId}`);
    const artifacts = await this.builds.artifacts(spec.id);
    if (artifacts.length === 0)
      throw new Invalid(`build ${spec.id} has no successful run with artifacts: a release needs a completed build`, { build_id: spec.id });
    const tag = input.tag ?? input.version ?? `sha-${spec.git_sha.slice(0, 12)}`;
    const digests: Record<string, string> = Object.fromEntries(artifacts.map((a) => [a.service_name, a.digest]));
    const row = {
      id: newId('rel'),
      project_id: projectId,
      build_id: spec.id,
      git_sha: spec.git_sha,
      manifest_hash: spec.manifest_hash,
      image_digests: JSON.stringify(digests),
      version: input.version ?? null,
      tag,
      created_by: principal.id,
    };
    try {
      return await this.db.transaction(async (trx) => {
        const [stored]: Release[] = await trx('releases').insert(row).returning('*');
        await emitReleaseCreated(trx, stored);
        return { ...stored, created: true };
      });
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      const existing: Release | undefined = await this.db('releases').where({ project_id: projectId, tag }).first();
      if (existing && existing.git_sha === spec.git_sha && canonicalJson(existing.image_digests) === canonicalJson(digests))
        return { ...existing, created: false };
      const other = existing ? ` for ${existing.git_sha === spec.git_sha ? 'other images of this commit' : `commit ${existing.git_sha.slice(0, 12)}`}` : '';
      throw new Conflict(`release tag '${tag}' already exists in project ${projectId}${other}`, { tag });
    }
  }

  list(projectId: string, query: ListQuery): Promise<Page<Release>> {
    return paginate(this.db('releases').where({ project_id: projectId }), query, (r: Release) => r, 'releases');
  }

  /** By tag, or by `rel_` id; 404 when the project has none. A `rel_` id alone (no project) is looked up by id. */
  async resolve(projectId: string | undefined, tagOrId: string): Promise<Release> {
    const column = /^rel_/.test(tagOrId) ? 'id' : 'tag';
    const found: Release | undefined = await this.db('releases')
      .where({ [column]: tagOrId, ...(projectId ? { project_id: projectId } : {}) })
      .first();
    if (!found) throw new NotFound(projectId ? `release ${tagOrId} not found in project ${projectId}` : `release ${tagOrId} not found`);
    return found;
  }

  /** The project of a release id, for the access check of a lookup by id alone. */
  async projectOf(releaseId: string): Promise<string | null> {
    const row: { project_id: string } | undefined = await this.db('releases').where({ id: releaseId }).first('project_id');
    return row?.project_id ?? null;
  }

  byTag(projectId: string, tag: string): Promise<ReleaseRecord | null> {
    return this.record(projectId, 'tag', tag);
  }

  byId(projectId: string, releaseId: string): Promise<ReleaseRecord | null> {
    return this.record(projectId, 'id', releaseId);
  }

  private async record(projectId: string, column: 'id' | 'tag', value: string): Promise<ReleaseRecord | null> {
    const found: Release | undefined = await this.db('releases')
      .where({ project_id: projectId, [column]: value })
      .first();
    if (!found) return null;
    // The released digests, at the repository each was built for (a later rebuild may have moved the build's latest artifacts).
    const artifacts = (await this.builds.artifacts(found.build_id)).filter((a) => found.image_digests[a.service_name] === a.digest);
    const images = Object.fromEntries(artifacts.map((a) => [a.service_name, `${a.image_ref.replace(/:[^:/]+$/, '')}@${a.digest}`]));
    const { created_by: _by, created_at, ...rest } = found;
    return { ...rest, images, created_at: new Date(created_at).toISOString() };
  }
}
