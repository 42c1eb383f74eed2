import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Principal } from '../../core/auth/principal.ts';
import type { ManifestProblem, StoredManifest } from '../../domain/manifest/types.ts';
import { ManifestRepository } from './repository.ts';
import { GitManifestSource } from './git-source.ts';
import { ManifestSyncListeners, type ManifestSyncer } from '../../core/ports/manifest.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import { OffLoopParser } from './off-loop.ts';
import type { Config } from '../../core/config/schema.ts';
import { outboundGuard } from '../../core/http/address-guard.ts';
import { registryHostRefusal } from '../../core/git-addresses.ts';

/** Where a manifest comes from: posted text, or the project's repository at a ref (default: its branch). */
export interface ManifestSourceInput {
  yaml?: string;
  ref?: string;
}

interface Resolved {
  yaml: string;
  git_sha: string | null;
  ref: string | null;
}

export interface ValidationAnswer {
  valid: boolean;
  errors: ManifestProblem[];
  warnings: ManifestProblem[];
  manifest_hash: string | null;
}

/** 422 carrying every problem: `{statusCode, error, message, errors: [{path, message}]}`. */
function invalid(errors: ManifestProblem[]): Boom.Boom {
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  const first = errors[0];
  const err = Boom.badData(`invalid manifest: ${first.path ? `${first.path}: ` : ''}${first.message}${more}`);
  (err.output.payload as unknown as Record<string, unknown>).errors = errors;
  return err;
}

/** What a refusal names: the request's `yaml` field, or the file read from the repository. */
const fieldOf = (source: Resolved) => (source.git_sha === null ? 'yaml' : `.svc/manifest.yaml at ${source.git_sha}`);

@injectable()
export class ManifestService implements ManifestSyncer {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ManifestRepository) private readonly manifests: ManifestRepository,
    @inject(GitManifestSource) private readonly git: GitManifestSource,
    @inject(ManifestSyncListeners) private readonly listeners: ManifestSyncListeners,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(OffLoopParser) private readonly parser: OffLoopParser,
  ) {}

  /** A registry.host the outbound address policy refuses, as a manifest problem (docs/security.md, "Outbound addresses"). */
  private async addressProblems(manifest: { registry?: unknown }): Promise<ManifestProblem[]> {
    const host = (manifest.registry as { host?: unknown } | undefined)?.host;
    if (typeof host !== 'string') return [];
    const refusal = await registryHostRefusal(host, outboundGuard(this.config), { acceptUnresolved: true });
    return refusal === null ? [] : [{ path: 'registry.host', message: `registry.host ${host} is refused: ${refusal}` }];
  }

  async current(projectId: string): Promise<StoredManifest> {
    const current = await this.manifests.current(projectId);
    if (!current) throw Boom.notFound(`no manifest has been synced for project ${projectId}`);
    return current;
  }

  /** Validates and stores a new version; an invalid manifest stores nothing. */
  async sync(projectId: string, input: ManifestSourceInput, principal: Principal): Promise<StoredManifest & { warnings: ManifestProblem[] }> {
    const project = await this.projects.byId(projectId);
    if (project?.deleted) throw Boom.badData(`project ${projectId} is deleted`);
    const source = await this.resolve(projectId, input);
    const result = await this.parser.load(source.yaml, fieldOf(source));
    if (!result.ok) throw invalid(result.errors);
    const refused = await this.addressProblems(result.manifest);
    if (refused.length) throw invalid(refused);
    const stored = await this.manifests.insert({
      project_id: projectId,
      manifest_hash: result.hash,
      ...source,
      parsed: result.manifest,
      synced_by: principal.id,
    });
    await this.listeners.synced(stored);
    return { ...stored, warnings: result.warnings };
  }

  syncAt(projectId: string, gitSha: string, principal: Principal): Promise<StoredManifest> {
    return this.sync(projectId, { ref: gitSha }, principal);
  }

  async validate(projectId: string, input: ManifestSourceInput): Promise<ValidationAnswer> {
    const source = await this.resolve(projectId, input);
    const result = await this.parser.load(source.yaml, fieldOf(source));
    const refused = result.ok ? await this.addressProblems(result.manifest) : [];
    if (result.ok && refused.length) return { valid: false, errors: refused, warnings: result.warnings, manifest_hash: null };
    return result.ok
      ? { valid: true, errors: [], warnings: result.warnings, manifest_hash: result.hash }
      : { valid: false, errors: result.errors, warnings: [], manifest_hash: null };
  }

  private async resolve(projectId: string, input: ManifestSourceInput): Promise<Resolved> {
    if (input.yaml !== undefined) return { yaml: input.yaml, git_sha: null, ref: null };
    const project = await this.projects.byId(projectId);
    if (!project?.repo_url) {
      throw Boom.badData(`project ${projectId} has no repo_url: post {yaml}, or set the repository with PATCH /projects/${projectId}`);
    }
    return this.git.read({ id: projectId, org_id: project.org_id }, project.repo_url, input.ref ?? project.branch);
  }
}
